/**
 * Decisions at the gateway: listing a tenant's pending decisions, answering one, and
 * resuming the run afterwards — a stopped run is queued again and replays from the top; a
 * wider-access request either queues the run in its wider mode's pool or ends it without running.
 * Expiring unanswered decisions and repairing a resume a crash interrupted are the recovery
 * loop's (run-recovery.ts), which uses `resume` and `endWithoutRunning` from here.
 */
import { principalOf } from '@islet/core';
import { isFinalStatus } from '@islet/protocol';
import {
  type DecisionRequest,
  type DecisionState,
  decisionView,
  ESCALATION_INDEX,
  type StoredRun,
} from '@islet/runs';
import type { Caller } from './auth.ts';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';
import type { RunsService } from './runs-service.ts';

export type DecisionView = DecisionRequest & { id: string; state: DecisionState };

/** Message of a run whose wider-access request was denied. */
export function escalationDeniedMessage(mode: string): string {
  return `wider access (${mode}) was not allowed; the program did not run`;
}

export function createDecisionsService(deps: GatewayDeps, runsService: RunsService) {
  const { decisions, runs, lifecycle, runQueue } = deps;

  async function listPending(caller: Caller): Promise<DecisionView[]> {
    const out: DecisionView[] = [];
    for (const d of await decisions.listPending(caller.tenantId)) {
      const status = await runs.status(d.runId);
      if (!status || isFinalStatus(status)) {
        // The run ended meanwhile (timeout, cancel): its decisions are moot.
        await decisions.closeRun(d.runId);
        continue;
      }
      out.push(decisionView(d));
    }
    return out;
  }

  /** Queues a paused run again so it replays. Idempotent: the job id names the decision round. */
  async function resume(run: StoredRun): Promise<void> {
    const all = await decisions.listRun(run.id);
    if (all.some((d) => d.state === 'pending')) return;
    const round = all.filter((d) => d.index !== ESCALATION_INDEX).length;
    await lifecycle.resume(run, { resumed: true });
    const noted = deps.poolDemand.queued(run.mode, run.tenant);
    await runQueue.enqueueRun({
      runId: run.id,
      tenant: run.tenant,
      mode: run.mode,
      attempts: deps.config.ISLET_JOB_ATTEMPTS,
      // A new job id per decision round: the first execution's job may still be completing.
      jobId: `${run.id}-r${round}`,
    });
    await noted;
    await decisions.unmarkPaused(run.id, run.mode);
  }

  async function endWithoutRunning(run: StoredRun, message: string) {
    const ended = await lifecycle.cancel(run, message, 'Failed');
    if (ended) deps.metrics.runsTotal.inc({ status: 'Failed', kind: 'abort', mode: run.mode });
    await decisions.unmarkPaused(run.id, run.mode);
  }

  async function answer(
    caller: Caller,
    runId: string,
    body: { index: number; allow: boolean; input?: unknown; scope?: 'once' | 'session'; reason?: string },
  ): Promise<DecisionView> {
    // Approvers are other principals by design (four-eyes): the tenant wall, not the owner's.
    const run = await runsService.inTenant(caller, runId);
    // The run_code document: "a new wider request needs a new answer" — never one for a session.
    if (body.scope === 'session' && body.index === ESCALATION_INDEX)
      throw new HttpProblem(
        'validation',
        'wider access is allowed for one run only; scope "session" applies to App calls',
      );
    if (isFinalStatus(run.status))
      throw new HttpProblem('run-finished', `code run ${runId} already ended as ${run.status}`);
    if (
      body.allow &&
      run.request.fourEyes &&
      run.request.sandboxPermissions &&
      // One person with two keys is still one person: the submitting principal, stored on the run.
      (run.request.submittedBy === caller.keyId ||
        (run.principal ?? run.request.submittedBy) === principalOf(caller))
    )
      throw new HttpProblem(
        'four-eyes',
        `code run ${runId} asked for ${run.request.sandboxPermissions} with this API key; another key of the tenant must approve it`,
      );
    const res = await decisions.answer(caller.tenantId, runId, body.index, {
      allow: body.allow,
      by: caller.keyId,
      ...(body.input !== undefined ? { input: body.input } : {}),
      ...(body.reason !== undefined ? { reason: body.reason } : {}),
    });
    if (!res.ok) {
      if (res.error === 'not-found')
        throw new HttpProblem('not-found', `code run ${runId} has no decision at index ${body.index}`);
      throw new HttpProblem('conflict', `the decision at index ${body.index} is already ${res.state}`, {
        state: res.state,
      });
    }
    const decision = res.decision;
    const sessionWide = body.allow && body.scope === 'session' && decision.index !== ESCALATION_INDEX;
    if (sessionWide) {
      // capability.target is `<connectionId>/<tool>` (connection ids have no slash).
      const target = decision.request.capability.target;
      const slash = target.indexOf('/');
      const [connectionId, tool] = [target.slice(0, slash), target.slice(slash + 1)];
      await deps.sessions.grant(
        run.tenant,
        run.session,
        connectionId,
        tool,
        caller.keyId,
        deps.config.ISLET_RUN_RETENTION_SECONDS,
      );
    }
    await runs.appendEvent(runId, 'decision.answered', {
      index: body.index,
      allow: body.allow,
      by: caller.keyId,
      ...(sessionWide ? { scope: 'session' } : {}),
    });
    if (decision.index === ESCALATION_INDEX) {
      if (body.allow) {
        await lifecycle.resume(run, { escalation: 'allowed' });
        await runsService.enqueue(run);
        await decisions.unmarkPaused(run.id, run.mode);
      } else {
        await endWithoutRunning(run, escalationDeniedMessage(run.mode));
      }
    } else if (decision.request.approval === 'stop' && res.stillPending === 0) {
      await resume(run);
    }
    return decisionView(decision);
  }

  return {
    listPending,
    answer,
    resume,
    endWithoutRunning,
  };
}

export type DecisionsService = ReturnType<typeof createDecisionsService>;
