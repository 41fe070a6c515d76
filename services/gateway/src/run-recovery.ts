/**
 * The gateway's drive of the recovery loop (`@islet/runs` run-recovery-loop.ts): every gateway runs
 * one, and what each run needs is the recovery matrix's (`reconcileRun`). Its feeds:
 *
 * - expired decisions: `expireDue` hands each to one gateway, which cancels the run with the
 *   expiry message (`islet_runs_total{status="Cancelled",kind="abort"}`);
 * - paused runs: a resume a crash interrupted is finished (queued for the next round, or the
 *   wider-access answer applied); a run that ended while paused leaves the paused set;
 * - the in-flight index, walked whole once per `inFlightIntervalMs` by the gateway holding the
 *   recovery lock: "nothing is lost" — a gateway that died between writing a run and queueing its
 *   job leaves it Running with no job; once older than `graceMs` and never started, it is queued
 *   again (jobId = run id, so a race with a slow submit cannot run it twice). An entry whose record
 *   is final, or that has no record and is older than `graceMs`, is removed (the tenant's quota
 *   place comes back).
 *
 * Failed jobs are the runners' feed (runner-recovery.ts): ending them counts the runner's metrics.
 *
 * Each applied action counts in `islet_run_recovery_actions_total{action,feed}` (feed:
 * decision-expiry, paused-repair, in-flight); a feed or run that could not be recovered this tick
 * in `islet_run_recovery_failures_total{feed}` (before-tick: the pending-decisions gauge refresh).
 */
import { SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import {
  createRunRecoveryLoop,
  expiredDecisionsFeed,
  expiryMessage,
  inFlightFeed,
  pausedRunsFeed,
  type RecoveryItem,
  type RunHead,
  type StoredRun,
} from '@islet/runs';
import { type DecisionsService, escalationDeniedMessage } from './decisions-service.ts';
import type { GatewayDeps } from './deps.ts';
import type { RunsService } from './runs-service.ts';

export interface GatewayRecoveryOptions {
  /** How often the loop ticks (expiry and paused runs are looked at each tick), ms. Default 2000. */
  intervalMs?: number;
  /** How often the in-flight index is walked, across all gateways, ms. Default 30000. */
  inFlightIntervalMs?: number;
  /** A run younger than this is still being submitted, ms. Default 60000. */
  graceMs?: number;
  /** A paused run with no pending decision, paused longer than this, is resumed, ms. Default 5000. */
  resumeRepairAfterMs?: number;
}

export function createGatewayRecovery(
  deps: GatewayDeps,
  runsService: RunsService,
  decisionsService: DecisionsService,
  options: GatewayRecoveryOptions = {},
) {
  const { decisions, runs, lifecycle, logger, metrics } = deps;
  const isMode = (m: string): m is SandboxMode => (SANDBOX_MODES as readonly string[]).includes(m);
  const resumeRepairAfterMs = options.resumeRepairAfterMs ?? 5000;
  const expireAfterMs = deps.config.ISLET_DECISION_EXPIRE_MS;

  /** The whole record, for the actions that write it (null: gone since the head was read). */
  const whole = (item: RecoveryItem) => runs.get(item.runId);
  const modeOf = (item: RecoveryItem, head: RunHead | null) => item.mode ?? head?.mode;
  const withRun = (apply: (run: StoredRun) => Promise<void>) => async (_a: unknown, item: RecoveryItem) => {
    const run = await whole(item);
    if (run) await apply(run);
  };

  return createRunRecoveryLoop({
    intervalMs: options.intervalMs ?? 2000,
    policy: { graceMs: options.graceMs ?? 60_000, resumeRepairAfterMs },
    feeds: [
      expiredDecisionsFeed(decisions),
      pausedRunsFeed(decisions, SANDBOX_MODES, resumeRepairAfterMs),
      inFlightFeed(deps.inFlight, options.inFlightIntervalMs ?? 30_000),
    ],
    reads: {
      head: (id) => deps.inFlight.head(id),
      decisions: (id) => decisions.listRun(id),
      job: async (mode, id) =>
        isMode(mode) ? ((await deps.runQueue.hasJob(mode, id)) ? 'present' : 'missing') : undefined,
    },
    beforeTick: async () => metrics.decisionsPending.set(await decisions.countAllPending()),
    capabilities: {
      'drop-in-flight': async (_a, item, head) => {
        if (!item.tenant) return;
        await deps.inFlight.drop(item.tenant, item.runId);
        logger.warn(
          { runId: item.runId, tenant: item.tenant, status: head?.status },
          'in-flight entry of a run that is not in flight; removed',
        );
      },
      enqueue: withRun(async (run) => {
        await runsService.enqueue(run);
        logger.warn({ runId: run.id }, 'run had no job; queued it again');
      }),
      'enqueue-escalated': withRun(async (run) => {
        await runsService.enqueue(run);
      }),
      resume: withRun((run) => decisionsService.resume(run)),
      'end-without-running': withRun((run) =>
        decisionsService.endWithoutRunning(run, escalationDeniedMessage(run.mode)),
      ),
      expire: withRun(async (run) => {
        await decisions.closeRun(run.id);
        const ended = await lifecycle.cancel(run, expiryMessage(expireAfterMs));
        if (ended) metrics.runsTotal.inc({ status: 'Cancelled', kind: 'abort', mode: run.mode });
        // A held call's gateway sees the run end; a stopped run has nothing running.
        await runs.requestCancel(run.id);
        await decisions.unmarkPaused(run.id, run.mode);
      }),
      'unmark-paused': async (_a, item, head) => {
        const mode = modeOf(item, head);
        if (mode) await decisions.unmarkPaused(item.runId, mode);
      },
    },
    onApplied: (action, { feed }) => metrics.recoveryActions.inc({ action: action.type, feed }),
    onError: (err, { feed, runId }) => {
      metrics.recoveryFailures.inc({ feed });
      logger.warn({ err: (err as Error).message, feed, runId }, 'run recovery failed; retried next tick');
    },
  });
}

export type GatewayRecovery = ReturnType<typeof createGatewayRecovery>;
