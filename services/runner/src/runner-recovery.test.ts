/**
 * The runner's drive of the recovery loop with a fake executor and fake queues (no Redis): each
 * run it ends counts once in islet_run_recovery_actions_total under the feed that handed it in, a
 * run already ended counts nothing, and a feed that cannot be read counts a failure.
 */
import { createLogger, createMetrics, type Metrics } from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import type { FailedJobSource, RunHead } from '@islet/runs';
import { describe, expect, it } from 'vitest';
import { createRunnerRecovery, WORKER_FAILED_FEED } from './runner-recovery.ts';

const logger = createLogger({ name: 'runner-recovery-test', level: 'silent' });

/** Runs by id, as the executor reads and ends them. */
function fakeRuns(ids: string[]) {
  const heads = new Map<string, RunHead>(
    ids.map((id) => [id, { status: 'Running', attempts: 1, createdAt: 0, mode: 'read-only' }]),
  );
  const givenUp: string[] = [];
  return {
    givenUp,
    executor: {
      head: async (id: string) => heads.get(id) ?? null,
      giveUp: async (id: string) => {
        const head = heads.get(id);
        if (!head) return;
        givenUp.push(id);
        heads.set(id, { ...head, status: 'Failed' });
      },
    },
  };
}

const failedJob = (runId: string) => ({ id: runId, failedReason: 'job stalled', data: { runId } });

async function actions(metrics: Metrics) {
  return Object.fromEntries(
    (await metrics.recoveryActions.get()).values.map((v) => [`${v.labels.action} ${v.labels.feed}`, v.value]),
  );
}
async function failures(metrics: Metrics) {
  return Object.fromEntries(
    (await metrics.recoveryFailures.get()).values.map((v) => [v.labels.feed, v.value]),
  );
}

describe('the runner recovery', () => {
  it('counts each run it ends once, under the feed that handed it in', async () => {
    const metrics = createMetrics({ component: 'runner-test', defaults: false });
    const { executor, givenUp } = fakeRuns(['failed-1', 'failed-2', 'seen-by-worker']);
    const queue: FailedJobSource = { getFailed: async () => [failedJob('failed-1'), failedJob('failed-2')] };
    const recovery = createRunnerRecovery({
      executor,
      metrics,
      logger,
      intervalMs: 1000,
      queues: (): Array<[SandboxMode, FailedJobSource]> => [['read-only', queue]],
    });
    await recovery.endFailed('seen-by-worker', 'read-only', 'job stalled');
    await recovery.tick();
    // Level-triggered: the worker's event for a run the sweep already ended applies nothing.
    await recovery.endFailed('failed-1', 'read-only', 'job stalled');
    await recovery.tick();
    expect(givenUp).toEqual(['seen-by-worker', 'failed-1', 'failed-2']);
    expect(await actions(metrics)).toEqual({
      [`give-up ${WORKER_FAILED_FEED}`]: 1,
      'give-up failed-jobs': 2,
    });
    expect(await failures(metrics)).toEqual({});
  });

  it('counts a feed it cannot read, and an end it cannot write, as failures', async () => {
    const metrics = createMetrics({ component: 'runner-test', defaults: false });
    const queue: FailedJobSource = {
      getFailed: async () => {
        throw new Error('Redis went away');
      },
    };
    const recovery = createRunnerRecovery({
      executor: {
        head: async () => ({ status: 'Running', attempts: 1, createdAt: 0, mode: 'read-only' }),
        giveUp: async () => {
          throw new Error('Redis went away');
        },
      },
      metrics,
      logger,
      intervalMs: 1000,
      queues: (): Array<[SandboxMode, FailedJobSource]> => [['read-only', queue]],
    });
    await recovery.tick();
    await recovery.tick();
    await recovery.endFailed('run-1', 'read-only', 'job stalled');
    expect(await failures(metrics)).toEqual({ 'failed-jobs': 2, [WORKER_FAILED_FEED]: 1 });
    expect(await actions(metrics)).toEqual({});
  });
});
