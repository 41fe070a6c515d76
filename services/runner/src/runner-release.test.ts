/**
 * A run's fair-share lease is released without holding up the job's completion: BullMQ's
 * moveToCompleted (which fetches the slot's next job) goes out while the release is still in
 * flight, and a graceful close still waits for it. Real runner, real redis-server, a fake
 * executor; the release is held by a wrapper, so the order is asserted, not a duration.
 */
import { createLogger, createMetrics } from '@islet/core';
import { describe, expect, it } from 'vitest';
import { until } from '../test/runner-harness.ts';
import { addRun, runnerServer } from '../test/runner-server.ts';
import { createFairShare } from './fair-share.ts';
import { createRunner } from './runner.ts';

const server = runnerServer();

describe('runner: the lease release', () => {
  it('the job completes while its release is in flight; close waits for the release', async () => {
    const config = server.config({
      ISLET_RUNNER_CONCURRENCY: '2',
      ISLET_TENANT_POOL_SHARE: '0.5',
    });
    let free: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      free = r;
    });
    const releases = { started: 0, done: 0 };
    const runner = createRunner({
      config,
      executor: { execute: async () => 'completed', giveUp: async () => undefined, head: async () => null },
      metrics: createMetrics({ component: 'runner-release-test', defaults: false }),
      logger: createLogger({ name: 'runner-release-test', level: 'silent' }),
      createShare: (d) => {
        const real = createFairShare(d);
        return {
          ...real,
          release: async (...args: Parameters<typeof real.release>) => {
            releases.started++;
            await held;
            await real.release(...args);
            releases.done++;
          },
        };
      },
    });
    const queue = server.queue();
    let closed = false;
    try {
      await runner.start();
      await addRun(queue, 'r1');
      await until('the job to complete', async () => (await queue.getCompletedCount()) === 1);
      expect(releases).toEqual({ started: 1, done: 0 });
      const closing = runner.close(5000).then(() => {
        closed = true;
      });
      await until(
        'the worker to stop fetching',
        () => runner.workersForTest().get('read-only')?.isRunning() === false,
      );
      expect(closed).toBe(false);
      free();
      await closing;
      expect(releases).toEqual({ started: 1, done: 1 });
    } finally {
      free();
      if (!closed) await runner.close(1000).catch(() => undefined);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
  });
});
