/**
 * The run_code skill through the cluster: `POST /v1/skills/run_code` becomes a `skill` job on the
 * BullMQ queue of the request's sandbox mode (the same pool that runs code runs), a runner executes
 * it with `runSkill` under the mode's kernel profile, and the gateway answers when the job ends.
 *
 * Waiting: BullMQ `QueueEvents` (one per mode, created on first use) + `job.waitUntilFinished`,
 * which also checks the job's stored state after subscribing, so a job that ends before the
 * subscription is still seen. The request and the result are sealed in Redis like run records.
 */

import { randomUUID } from 'node:crypto';
import { principalOf } from '@islet/core';
import type { SandboxMode, SkillRequest, SkillResult } from '@islet/protocol';
import type { RunJobData } from '@islet/runs';
import type { Caller } from './auth.ts';
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';
import { checkSessionId } from './session-id.ts';

/** Time a skill job may wait for a runner beyond its own timeout before the request gives up, ms. */
const SKILL_QUEUE_ALLOWANCE_MS = 60_000;

/** One skill run as the HTTP route and the MCP tool hand it over. */
interface SkillRunInput {
  /** Who asks: its tenant, principal and scopes (the session claim) and the tenant's in-flight limit. */
  caller: Caller;
  mode: SandboxMode;
  skill: SkillRequest;
  /** The session whose workspace the skill works in (a scratch directory when absent). */
  sessionId?: string;
}

export function createSkillsService(
  deps: GatewayDeps,
  closing: AbortSignal,
  claimSession: (caller: Caller, session: string) => Promise<void>,
) {
  // Closed with this service (one QueueEvents per mode, each on a connection of its own).
  const jobEvents = deps.jobEvents.open();

  /**
   * The mode a skill request runs in: `sandbox_permissions` may narrow it to `read-only`; the
   * default is `workspace-write` (the skill writes in its working directory). `danger-full-access`
   * needs a justified, approved request, which only code runs have (POST /v1/runs).
   */
  function modeFor(asked: unknown): SandboxMode {
    if (asked === undefined || asked === 'workspace-write') return 'workspace-write';
    if (asked === 'read-only') return 'read-only';
    if (asked === 'danger-full-access')
      throw new HttpProblem(
        'validation',
        'invalid sandbox_permissions: danger-full-access needs a justified, approved request; submit it as a run (POST /v1/runs with sandbox_permissions and justification)',
      );
    throw new HttpProblem('validation', 'invalid sandbox_permissions: expected read-only or workspace-write');
  }

  async function execute(input: SkillRunInput): Promise<SkillResult> {
    const { caller, skill, sessionId } = input;
    const context = { tenant: caller.tenantId, mode: input.mode };
    if (sessionId !== undefined) {
      checkSessionId(sessionId);
      // A skill works in its session's workspace: the session's owner's, claimed like a run's.
      await claimSession(caller, sessionId);
    }
    const id = `skill-${randomUUID()}`;
    const ttlMs = (skill.timeout ?? 60_000) + SKILL_QUEUE_ALLOWANCE_MS;
    // Skills count in the tenant's in-flight quota with its runs (and in its fair share on the runners).
    const limit = caller.tenant.maxInFlightRuns ?? deps.config.ISLET_MAX_IN_FLIGHT_RUNS;
    if (!(await deps.runs.reserveSkill(context.tenant, id, ttlMs + 5_000, limit)))
      throw new HttpProblem(
        'quota-exceeded',
        `tenant has ${limit} runs and skills in flight, the most it may have`,
        { limit },
        { 'retry-after': '1' },
      );
    let result: SkillResult | undefined;
    try {
      // Listed with the tenant's runs (style `skill`); a skill has no record, its summary is all.
      await deps.runIndex.skillStarted(context.tenant, {
        id,
        description: `${skill.language} skill`,
        sessionId: sessionId ?? '',
        principal: principalOf(caller),
        mode: context.mode,
        createdAt: Date.now(),
      });
      result = await enqueueAndWait(id, skill, context, sessionId, ttlMs);
      return result;
    } finally {
      await deps.runIndex
        .skillEnded(context.tenant, id, {
          status: result?.success ? 'Completed' : 'Failed',
          kind: result === undefined ? 'sandbox-unavailable' : result.success ? 'none' : 'exception',
          usage: {
            outputBytes: result ? Buffer.byteLength(result.output) + Buffer.byteLength(result.error) : 0,
          },
        })
        .catch((err: unknown) => deps.logger.warn({ err }, 'a skill end could not be indexed'));
      await deps.runs.releaseSkill(context.tenant, id).catch(() => undefined);
    }
  }

  async function enqueueAndWait(
    id: string,
    skill: SkillRequest,
    context: { tenant: string; mode: SandboxMode },
    sessionId: string | undefined,
    ttlMs: number,
  ): Promise<SkillResult> {
    await jobEvents.ready(context.mode);
    const data: RunJobData = {
      runId: id,
      tenant: context.tenant,
      enqueuedAtMs: Date.now(),
      skill: {
        sealedRequest: deps.sealer.seal(JSON.stringify(skill)),
        ...(sessionId !== undefined ? { sessionId } : {}),
      },
    };
    const noted = deps.poolDemand.queued(context.mode, context.tenant);
    const job = await deps.runQueue.enqueueSkill(context.mode, data, id);
    await noted;
    let sealed: unknown;
    // Takes the listener off `closing` (which outlives every request) when the wait ends.
    const waitDone = new AbortController();
    try {
      sealed = await Promise.race([
        job.finished(jobEvents, ttlMs),
        new Promise((_, reject) => {
          const onAbort = () => reject(new HttpProblem('unavailable', 'the gateway is shutting down'));
          if (closing.aborted) onAbort();
          closing.addEventListener('abort', onAbort, { once: true, signal: waitDone.signal });
        }),
      ]);
    } catch (err) {
      if (err instanceof HttpProblem) throw err;
      const message = (err as Error).message;
      if (/timed out/i.test(message)) {
        await job.remove(); // still queued: do not run it for nobody
        throw new HttpProblem(
          'unavailable',
          `no runner finished the skill within ${ttlMs}ms (is a ${context.mode} runner up?)`,
          { mode: context.mode },
          { 'retry-after': '5' },
        );
      }
      throw new HttpProblem('unavailable', `the skill run was lost: ${message}`, { mode: context.mode });
    } finally {
      waitDone.abort();
    }
    if (typeof sealed !== 'string') throw new HttpProblem('internal', 'the runner answered no skill result');
    return JSON.parse(deps.sealer.open(sealed)) as SkillResult;
  }

  return {
    modeFor,
    execute,
    async close() {
      await jobEvents.close();
    },
  };
}
