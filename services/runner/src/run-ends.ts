/**
 * A run's ends outside its program and their metering: the tenant usage of an ended run (`meter`),
 * an end the executor writes itself (`end`, `counted`) and a run whose job BullMQ gave up on
 * (`giveUp`). Moved out of run-executor.ts (a pure move), which makes these once and calls them
 * directly.
 */
import type { FailureKind } from '@islet/protocol';
import type { createRunLifecycle, StoredRun } from '@islet/runs';
import type { RunExecutorDeps } from './run-executor-types.ts';
import type { createRunMetrics } from './run-metrics.ts';

export function createRunEnds(
  runs: RunExecutorDeps['runs'],
  lifecycle: ReturnType<typeof createRunLifecycle>,
  runMetrics: ReturnType<typeof createRunMetrics>,
) {
  /** Counts an ended run in the tenant usage metrics (bounded: see core's meteredTenant). */
  function meter(run: StoredRun, status: string, text: string, bindingCalls: number, cpuMs = 0) {
    runMetrics.usage(run.tenant, status, {
      seconds: Math.max(0, Date.now() - run.createdAt) / 1000,
      bindingCalls,
      outputBytes: Buffer.byteLength(text),
      cpuSeconds: cpuMs / 1000,
    });
  }

  async function end(
    run: StoredRun,
    status: 'Failed' | 'Cancelled',
    reason: 'Unavailable' | 'Cancelled',
    kind: FailureKind,
    message: string,
  ) {
    counted(run, await lifecycle.fail(run, { status, reason, kind, message }), status, kind);
  }

  /** Counts a run this executor ended outside its program (`done`: the end was written here). */
  function counted(run: StoredRun, done: boolean, status: 'Failed' | 'Cancelled', kind: FailureKind) {
    if (!done) return;
    runMetrics.ended(status, kind, run.mode);
    meter(run, status, '', 0);
  }

  /**
   * Ends a run whose job BullMQ gave up on (attempts used up, stalled too often); the recovery loop
   * decided it (reconcile-run.ts: a run that already ended keeps its end, and the end is written once).
   */
  async function giveUp(runId: string, why: string) {
    const run = await runs.get(runId);
    if (run) counted(run, await lifecycle.giveUp(run, why), 'Failed', 'worker-exit');
  }

  return { meter, end, counted, giveUp };
}
