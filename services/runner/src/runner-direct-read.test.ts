/**
 * A runner's Redis connections read their replies through `onread` (core's redis-direct-read.ts):
 * the mode worker's own, BullMQ's blocking duplicate of it (the parked pop's reply: the pick-up)
 * and the fair share's. Over a job's pick-up and completion none of the process's Redis sockets
 * takes a readable-stream push (the test's own connection is switched too; a plain client's ping
 * shows the count sees an unswitched socket). Fails with any of the three left unswitched. Real
 * runner, real redis-server, BullMQ, a fake executor.
 */
import { Socket } from 'node:net';
import { createLogger, createMetrics, createRedis, readRepliesDirect } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RunJobData, runJobOptions } from '@islet/runs';
import { countStreamPushes, type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerTestConfig, until } from '../test/runner-harness.ts';
import { createFairShare } from './fair-share.ts';
import { blockingClientOf } from './mode-worker.ts';
import type { ExecuteJob } from './run-executor-types.ts';
import { createRunner } from './runner.ts';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
});
afterAll(async () => {
  await server?.stop();
});

/** Readable-stream pushes (bytes, not EOF) on sockets to `port` while counting, by local port. */
const countPushes = (port: number) =>
  countStreamPushes(
    (stream) => stream instanceof Socket && stream.remotePort === port,
    (stream) => (stream as Socket).localPort ?? 0,
  );

describe('runner: replies read through onread', () => {
  it("takes no stream push on any of its Redis sockets over a job's pick-up and end", async () => {
    const config = runnerTestConfig(server.url, {
      ISLET_RUNNER_CONCURRENCY: '2',
      ISLET_TENANT_POOL_SHARE: '0.5',
      ISLET_RUNNER_PICKUP_WATCHDOG_MS: '0',
    });
    const executed: string[] = [];
    let shareConnection: unknown;
    const runner = createRunner({
      config,
      executor: {
        execute: async (job: ExecuteJob) => {
          executed.push(job.runId);
          return 'completed';
        },
        giveUp: async () => undefined,
        head: async () => null,
      },
      metrics: createMetrics({ component: 'runner-direct-read-test', defaults: false }),
      logger: createLogger({ name: 'runner-direct-read-test', level: 'silent' }),
      createShare: (d) => {
        shareConnection = d.redis;
        return createFairShare(d);
      },
    });
    // The test's own connection is switched too, so every Redis socket here should take no push.
    const own = createRedis(server.url);
    readRepliesDirect(own);
    const queue = new Queue<RunJobData>(runQueueName('read-only'), { connection: own, prefix: QUEUE_PREFIX });
    // A plain client: the count sees what an unswitched socket takes.
    const plain = createRedis(server.url);
    try {
      await runner.start();
      await queue.waitUntilReady();
      await plain.ping();
      expect(shareConnection).toBeDefined();
      const counting = countPushes(server.port);
      try {
        // The worker waits in its blocking pop: the add's marker wakes it (the blocking reply).
        await queue.add(
          'run',
          { runId: 'r1', tenant: 'acme', enqueuedAtMs: Date.now() },
          runJobOptions('r1', 1),
        );
        await until('the job to complete', async () => (await queue.getCompletedCount()) === 1);
        await plain.ping();
      } finally {
        counting.stop();
      }
      expect(executed).toEqual(['r1']);
      const plainPort = (plain as unknown as { stream: Socket }).stream.localPort ?? -1;
      // The plain client's one ping was counted: the count sees unswitched sockets.
      expect(counting.pushed.get(plainPort)).toBe(1);
      counting.pushed.delete(plainPort);
      expect(Object.fromEntries(counting.pushed)).toEqual({});
    } finally {
      await runner.close(2000);
      await queue.close();
      own.disconnect();
      plain.disconnect();
    }
  });

  it("finds BullMQ's blocking client of a worker", async () => {
    const { Worker } = await import('bullmq');
    const connection = createRedis(server.url);
    const worker = new Worker('direct-read-probe', async () => undefined, { connection, autorun: false });
    try {
      const blocking = blockingClientOf(worker);
      expect(blocking).toBeDefined();
      expect(blocking).not.toBe(connection);
      expect(await blocking!.ping()).toBe('PONG');
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });
});
