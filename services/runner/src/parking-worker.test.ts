/**
 * The runner's BullMQ worker against a real redis-server: a job it fetched starts before it asks
 * Redis for another (BullMQ alone fetches again, and finds the queue empty, before it starts the
 * job it holds: a round trip on every pick-up). Read through the worker's count of fetches that
 * went to Redis, as each processor starts; never through elapsed time.
 */
import { type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParkingWorker } from './parking-worker.ts';
import { SlotGate } from './slot-gate.ts';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
});
afterAll(async () => {
  await server?.stop();
});

async function until(what: string, ok: () => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A worker of 4 slots whose processor notes the fetch count as it starts and holds until `free`. */
function setUp(name: string) {
  const connection = { host: '127.0.0.1', port: server.port };
  const queue = new Queue(name, { connection });
  const started: { id: string; fetches: number }[] = [];
  let free: () => void = () => undefined;
  const held = new Promise<void>((r) => {
    free = r;
  });
  const worker: ParkingWorker<{ n: number }> = new ParkingWorker<{ n: number }>(
    name,
    async (job) => {
      started.push({ id: job.id ?? '', fetches: worker.redisFetches });
      await held;
    },
    { connection, concurrency: 4, autorun: false },
  );
  worker.gate = new SlotGate({ slots: 4, parkedMax: 0, isolatesMax: 0 });
  return {
    queue,
    worker,
    started,
    async stop() {
      free();
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    },
  };
}

describe('ParkingWorker', () => {
  it('an idle worker woken by a job starts it after the one fetch that brought it', async () => {
    const t = setUp('pw-idle');
    try {
      void t.worker.run();
      await t.worker.waitUntilReady();
      // Idle: its first fetch found nothing and it blocks on the queue's marker.
      await until('the first empty fetch', () => t.worker.redisFetches >= 1);
      await new Promise((r) => setTimeout(r, 100));
      const before = t.worker.redisFetches;
      await t.queue.add('run', { n: 1 }, { jobId: 'a' });
      await until('the job started', () => t.started.length === 1);
      expect(t.started[0]).toEqual({ id: 'a', fetches: before + 1 });
    } finally {
      await t.stop();
    }
  });

  it('jobs already queued start one by one, each before the next fetch', async () => {
    const t = setUp('pw-queued');
    try {
      for (const id of ['a', 'b', 'c']) await t.queue.add('run', { n: 1 }, { jobId: id });
      void t.worker.run();
      await until('three jobs started', () => t.started.length === 3);
      expect(t.started).toEqual([
        { id: 'a', fetches: 1 },
        { id: 'b', fetches: 2 },
        { id: 'c', fetches: 3 },
      ]);
    } finally {
      await t.stop();
    }
  });
});
