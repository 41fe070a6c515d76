/**
 * The runner's BullMQ worker against a real redis-server: a job it fetched starts before it asks
 * Redis for another (BullMQ alone fetches again, and finds the queue empty, before it starts the
 * job it holds: a round trip on every pick-up), and a drained queue costs no fetch (BullMQ alone
 * fetches twice for nothing after each job: once speculatively, once on the marker its own fetch
 * left). Read through the worker's counts of fetches that went to Redis and of looks that found
 * the queue drained, as each processor starts; never through elapsed time. Workers block on the
 * marker far longer than a test waits (`drainDelay`), so a job picked up came by its wake-up.
 */
import { type RedisServer, startRedis } from '@islet/testkit';
import { DelayedError, type Job, Queue, type RedisClient, Worker } from 'bullmq';
import { Redis } from 'ioredis';
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

/** Blocking waits on the marker outlast any test: a job a test sees start came by a wake-up. */
const DRAIN_DELAY_S = 60;

/**
 * A worker of 4 slots whose processor takes a slot, notes the fetch count as it starts and holds
 * until `free` (or runs `process` instead).
 */
function setUp(name: string, process?: (job: Job<{ n: number }>, token?: string) => Promise<void>) {
  const connection = { host: '127.0.0.1', port: server.port };
  const queue = new Queue(name, { connection });
  const started: { id: string; fetches: number }[] = [];
  let free: () => void = () => undefined;
  const held = new Promise<void>((r) => {
    free = r;
  });
  const worker: ParkingWorker<{ n: number }> = new ParkingWorker<{ n: number }>(
    name,
    async (job, token) => {
      // As the runner's processor: the job takes the slot its fetch reserved, and gives it back.
      await worker.gate?.take(token);
      try {
        started.push({ id: job.id ?? '', fetches: worker.redisFetches });
        await (process ? process(job, token) : held);
      } finally {
        worker.gate?.release();
      }
    },
    { connection, concurrency: 4, autorun: false, drainDelay: DRAIN_DELAY_S },
  );
  worker.gate = new SlotGate({ slots: 4, parkedMax: 0, isolatesMax: 0 });
  return {
    queue,
    worker,
    started,
    free: () => free(),
    async stop() {
      free();
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    },
  };
}

/**
 * Counts fetches BullMQ's loop made with no turn of the event loop between them: past 1000 it is
 * spinning on promises alone (no reply can be read); the guard notes it and lets one turn pass,
 * so a test that finds a spin fails instead of freezing its process.
 */
class SpinGuardWorker<T> extends ParkingWorker<T> {
  spins = 0;
  private inTurn = 0;
  protected override async moveToActive(client: RedisClient, token: string, name?: string): Promise<Job<T>> {
    if (++this.inTurn === 1)
      setImmediate(() => {
        this.inTurn = 0;
      });
    if (this.inTurn > 1000) {
      this.spins++;
      await new Promise((r) => setImmediate(r));
    }
    return super.moveToActive(client, token, name);
  }
}

describe('ParkingWorker', () => {
  it('an idle worker woken by a job starts it after the one fetch that brought it', async () => {
    const t = setUp('pw-idle');
    try {
      void t.worker.run();
      await t.worker.waitUntilReady();
      // Idle: its first look found the queue drained, and it blocks on the queue's marker.
      await until('the first look', () => t.worker.drainedProbes >= 1);
      await new Promise((r) => setTimeout(r, 100));
      await t.queue.add('run', { n: 1 }, { jobId: 'a' });
      await until('the job started', () => t.started.length === 1);
      expect(t.started[0]).toEqual({ id: 'a', fetches: 1 });
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

  it('sequential jobs cost one fetch each: a drained queue makes the worker block, not fetch', async () => {
    const t = setUp('pw-sequential', async () => undefined);
    const completed: string[] = [];
    t.worker.on('completed', (job) => completed.push(job.id ?? ''));
    try {
      void t.worker.run();
      await until('the first look', () => t.worker.drainedProbes >= 1);
      for (const [i, id] of ['a', 'b', 'c', 'd', 'e'].entries()) {
        await t.queue.add('run', { n: 1 }, { jobId: id });
        await until(`${id} completed`, () => completed.length === i + 1);
        // After each job: one look found the queue drained (the marker its fetch left is gone).
        await until(`the look after ${id}`, () => t.worker.drainedProbes >= i + 2);
      }
      await new Promise((r) => setTimeout(r, 200));
      expect(t.started.map((s) => s.fetches)).toEqual([1, 2, 3, 4, 5]);
      expect(t.worker.redisFetches).toBe(5);
      expect(t.worker.drainedProbes).toBe(6);
      // A job added while the worker blocks is still picked up by the marker's wake-up.
      await t.queue.add('run', { n: 1 }, { jobId: 'f' });
      await until('f completed', () => completed.length === 6);
      expect(t.worker.redisFetches).toBe(6);
    } finally {
      await t.stop();
    }
  });

  it('jobs added while all run are each picked up (by a completion or the marker)', async () => {
    const t = setUp('pw-busy');
    const completed: string[] = [];
    t.worker.on('completed', (job) => completed.push(job.id ?? ''));
    try {
      void t.worker.run();
      await until('the first look', () => t.worker.drainedProbes >= 1);
      const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      for (const id of ids) await t.queue.add('run', { n: 1 }, { jobId: id });
      await until('four started (the slots)', () => t.started.length === 4);
      // The held ones end: the rest start as slots free up.
      t.free();
      await until('all completed', () => completed.length === ids.length);
      expect([...completed].sort()).toEqual(ids);
    } finally {
      await t.stop();
    }
  });

  it('a deferred job (moved to delayed, as the fair share does) comes back and runs', async () => {
    let deferred = false;
    const t = setUp('pw-deferred', async (job, token) => {
      if (!deferred) {
        deferred = true;
        await job.moveToDelayed(Date.now() + 50, token);
        throw new DelayedError();
      }
    });
    const completed: string[] = [];
    t.worker.on('completed', (job) => completed.push(job.id ?? ''));
    try {
      void t.worker.run();
      await until('the first look', () => t.worker.drainedProbes >= 1);
      await t.queue.add('run', { n: 1 }, { jobId: 'a' });
      await until('a completed', () => completed.length === 1);
      expect(t.started.map((s) => s.id)).toEqual(['a', 'a']);
    } finally {
      await t.stop();
    }
  });

  it('a job a deferred job fetched starts, while that deferral gives its start back (no spin on promises)', async () => {
    // The defer-probe's stuck run: a deferred job's processJob fetches the next job under its own
    // token (BullMQ's handleFailed), and its end then gives the start of its fetch back (a round
    // trip). Another job deferred meanwhile sends BullMQ's loop around; its fetches must not
    // answer "no job" in promises only, or the reply that ends the first deferral is never read:
    // the runner froze, the job it fetched (its run begun, its lease held) never ran.
    const connection = { host: '127.0.0.1', port: server.port };
    const name = 'pw-defer-spin';
    const queue = new Queue(name, { connection });
    const redis = new Redis(connection);
    const started: string[] = [];
    let freeX: () => void = () => undefined;
    const xHeld = new Promise<void>((r) => {
      freeX = r;
    });
    let xDeferred = false;
    const worker: SpinGuardWorker<{ tenant: string }> = new SpinGuardWorker<{ tenant: string }>(
      name,
      async (job, token) => {
        await worker.gate?.take(token);
        try {
          started.push(job.id ?? '');
          if (job.id === 'b') return;
          if (job.id === 'a') await queue.add('run', { tenant: 't' }, { jobId: 'b' });
          else await xHeld;
          // Both deferred, as the fair share does; b, queued by a, comes with a's deferral.
          await job.moveToDelayed(Date.now() + 60_000, token);
          if (job.id === 'x') xDeferred = true;
          throw new DelayedError();
        } finally {
          worker.gate?.release();
        }
      },
      // Two slots, both taken (x, a): BullMQ's loop itself fetches nothing until one ends.
      { connection, concurrency: 2, autorun: false, drainDelay: DRAIN_DELAY_S },
    );
    worker.gate = new SlotGate({ slots: 2, parkedMax: 0, isolatesMax: 0 });
    let givenBack = 0;
    worker.fetchStart = {
      on: async () => false,
      start: () => ({ fixed: { args: [] }, nowMs: 0 }),
      // a's start is given back once x was deferred too, by a round trip.
      giveBack: async () => {
        freeX();
        await until('x deferred', () => xDeferred);
        await redis.get('anything');
        givenBack++;
      },
    };
    // a's fetch began its run with a lease granted (what fetch-lease-begin answers); its
    // processor never takes it (deferred before its start), so its end gives it back.
    (worker as unknown as { started: Map<string, unknown> }).started.set('a', [[], 0, [], [1, 2]]);
    try {
      await queue.add('run', { tenant: 't' }, { jobId: 'x' });
      await queue.add('run', { tenant: 't' }, { jobId: 'a' });
      void worker.run();
      await until('b started', () => started.includes('b'));
      expect(givenBack).toBe(1);
      expect(worker.spins).toBe(0);
      expect(started).toEqual(['x', 'a', 'b']);
    } finally {
      freeX();
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      redis.disconnect();
    }
  });

  it("a dead worker's job is recovered by a blocked worker's stalled check", async () => {
    const connection = { host: '127.0.0.1', port: server.port };
    const name = 'pw-stalled';
    const queue = new Queue(name, { connection });
    // A worker that takes the job and dies: its lock lapses, unrenewed.
    const dead = new Worker(name, null, { connection, autorun: false, lockDuration: 500 });
    const started: string[] = [];
    const rescuer = new ParkingWorker<{ n: number }>(
      name,
      async (job) => {
        started.push(job.id ?? '');
      },
      { connection, concurrency: 4, autorun: false, drainDelay: DRAIN_DELAY_S, stalledInterval: 300 },
    );
    rescuer.gate = new SlotGate({ slots: 4, parkedMax: 0, isolatesMax: 0 });
    try {
      await queue.add('run', { n: 1 }, { jobId: 'a' });
      expect((await dead.getNextJob('dead-token'))?.id).toBe('a');
      await dead.close();
      void rescuer.run();
      await until('the rescuer found the queue drained', () => rescuer.drainedProbes >= 1);
      await until('the stalled job ran again', () => started.length === 1);
      expect(started).toEqual(['a']);
      expect(rescuer.redisFetches).toBe(1);
    } finally {
      await rescuer.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
