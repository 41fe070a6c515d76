/**
 * The pick-up watchdog inside a real runner against a real redis-server: a worker made to stop
 * fetching (paused through the test hook, the state a BullMQ worker with a hung blocking client is
 * in) is replaced, the runs that waited are executed and the restart is counted; a worker that
 * holds a job is left alone however long others wait. The executor is a fake: what is under test
 * is the worker's lifecycle, not the engine.
 */

import { createLogger, createMetrics, type Metrics } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RunJobData, runJobOptions } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { runnerTestConfig } from '../test/runner-harness.ts';
import type { ExecuteJob, RunExecutor } from './run-executor.ts';
import { createRunner, type Runner } from './runner.ts';

const WATCHDOG_MS = 200;

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function restartsOf(metrics: Metrics, mode: string): Promise<number> {
  return (await metrics.workerRestarts.get()).values.find((v) => v.labels.mode === mode)?.value ?? 0;
}

/** A runner on its own redis-server with a fake executor; `stop` ends everything it started. */
async function setUp(concurrency: number, execute: (job: ExecuteJob) => Promise<'completed'>) {
  const server: RedisServer = await startRedis({ appendOnly: false });
  const config = runnerTestConfig(server.url, {
    ISLET_RUNNER_CONCURRENCY: String(concurrency),
    ISLET_RUNNER_PICKUP_WATCHDOG_MS: String(WATCHDOG_MS),
    ISLET_TENANT_POOL_SHARE: '1',
  });
  const metrics = createMetrics({ component: 'runner-test', defaults: false });
  const executor: RunExecutor = { execute, giveUp: async () => undefined, head: async () => null };
  const logger = createLogger({ name: 'runner-watchdog-test', level: 'silent' });
  const runner: Runner = createRunner({ config, executor, metrics, logger });
  const queue = new Queue<RunJobData>(runQueueName('read-only'), {
    connection: { host: '127.0.0.1', port: server.port },
    prefix: QUEUE_PREFIX,
  });
  let started = false;
  const enqueue = (runId: string, tenant = 'acme') =>
    queue.add('run', { runId, tenant, enqueuedAtMs: Date.now() }, runJobOptions(runId, 1));
  return {
    metrics,
    queue,
    runner,
    enqueue,
    async start() {
      await runner.start();
      started = true;
    },
    async stop() {
      if (started) await runner.close(1000);
      await queue.close();
      await server.stop();
    },
  };
}

describe('runner pick-up watchdog (real Redis)', () => {
  it('replaces a worker that stopped fetching; the runs that waited are executed and the restart counted', async () => {
    const executed: string[] = [];
    const t = await setUp(2, async (job) => {
      executed.push(job.runId);
      return 'completed';
    });
    try {
      await t.start();
      await t.enqueue('before');
      await until('the healthy worker to run a job', () => executed.includes('before'));

      const stuck = t.runner.workersForTest().get('read-only');
      expect(stuck).toBeDefined();
      await stuck?.pause(true);
      // A worker blocked on the queue's marker when paused may still take the first job; the rest
      // wait for a worker that no longer fetches.
      const ids = ['w1', 'w2', 'w3', 'w4', 'w5'];
      for (const id of ids) await t.enqueue(id);
      await until('every waiting run to be executed', () => ids.every((id) => executed.includes(id)));

      const replacement = t.runner.workersForTest().get('read-only');
      expect(replacement).toBeDefined();
      expect(replacement).not.toBe(stuck);
      expect(stuck?.isRunning()).toBe(false);
      expect(await restartsOf(t.metrics, 'read-only')).toBe(1);
      expect(executed.filter((id) => ids.includes(id)).sort()).toEqual(ids); // each once
      await until('the queue to drain', async () => (await t.queue.getCompletedCount()) === 6);

      // The fresh worker is healthy: later runs go through without another restart.
      await t.enqueue('after');
      await until('a run after the restart', () => executed.includes('after'));
      await new Promise((r) => setTimeout(r, 3 * WATCHDOG_MS));
      expect(await restartsOf(t.metrics, 'read-only')).toBe(1);
    } finally {
      await t.stop();
    }
  });

  it('never restarts a worker that holds a job, however long other runs wait', async () => {
    const executed: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const t = await setUp(1, async (job) => {
      executed.push(job.runId);
      if (job.runId === 'long') await gate;
      return 'completed';
    });
    try {
      await t.start();
      await t.enqueue('long');
      await until('the long run to start', () => executed.includes('long'));
      await t.enqueue('queued', 'globex');
      // Its one slot is taken: `queued` waits while the watchdog checks many times over.
      await new Promise((r) => setTimeout(r, 6 * WATCHDOG_MS));
      expect(await t.queue.getWaitingCount()).toBe(1);
      const worker = t.runner.workersForTest().get('read-only');
      expect(await restartsOf(t.metrics, 'read-only')).toBe(0);
      release();
      await until('the waiting run to execute on the same worker', () => executed.includes('queued'));
      expect(t.runner.workersForTest().get('read-only')).toBe(worker);
      expect(await restartsOf(t.metrics, 'read-only')).toBe(0);
    } finally {
      release();
      await t.stop();
    }
  });
});
