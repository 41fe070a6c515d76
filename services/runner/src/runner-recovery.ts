/**
 * The runner's drive of the recovery loop (`@islet/runs` run-recovery-loop.ts): BullMQ fails a
 * job that stalled more than maxStalledCount times inside its stalled check, without a worker
 * `failed` event; the failed-jobs feed finds such jobs (and any other failed one whose run never
 * ended) and the matrix ends their runs, so every accepted run reaches a final status. A worker
 * `failed` event is reconciled at once through the same loop (`endFailed`, feed `worker-failed`).
 *
 * Each applied action counts in `islet_run_recovery_actions_total{action,feed}`, each feed or run
 * that could not be recovered in `islet_run_recovery_failures_total{feed}`.
 */
import type { Logger, Metrics } from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import { createRunRecoveryLoop, type FailedJobSource, failedJobsFeed } from '@islet/runs';
import type { RunExecutor } from './run-executor.ts';

/** The feed label of a run ended from a worker's own `failed` event. */
export const WORKER_FAILED_FEED = 'worker-failed';

export interface RunnerRecoveryOptions {
  executor: Pick<RunExecutor, 'giveUp' | 'head'>;
  metrics: Metrics;
  logger: Logger;
  /** The live queue of each mode this runner serves (a worker restart replaces it). */
  queues: () => Iterable<[SandboxMode, FailedJobSource]>;
  /** How often the failed-jobs feed is read, ms (the stalled-check interval). */
  intervalMs: number;
}

export function createRunnerRecovery(options: RunnerRecoveryOptions) {
  const { executor, metrics, logger } = options;
  const loop = createRunRecoveryLoop({
    intervalMs: options.intervalMs,
    policy: { graceMs: 0, resumeRepairAfterMs: 0 },
    feeds: [failedJobsFeed(options.queues)],
    reads: { head: (runId) => executor.head(runId) },
    capabilities: { 'give-up': (action, item) => executor.giveUp(item.runId, action.why) },
    onApplied: (action, { feed }) => metrics.recoveryActions.inc({ action: action.type, feed }),
    onError: (err, { feed, runId }) => {
      metrics.recoveryFailures.inc({ feed });
      logger.warn({ err: (err as Error).message, feed, runId }, 'failed-job sweep could not run');
    },
  });
  return {
    start: loop.start,
    stop: loop.stop,
    tick: loop.tick,
    /** Ends the run of a job its worker saw fail for good (a no-op if the run already ended). */
    async endFailed(runId: string, mode: SandboxMode, reason: string): Promise<void> {
      try {
        await loop.reconcile({ runId, mode, job: { state: 'failed', reason } }, WORKER_FAILED_FEED);
      } catch (err) {
        metrics.recoveryFailures.inc({ feed: WORKER_FAILED_FEED });
        logger.error({ err }, 'could not end a failed run');
      }
    },
  };
}

export type RunnerRecovery = ReturnType<typeof createRunnerRecovery>;
