// The gateway's job commands against a real redis-server: a run's job is its run id (a second add
// is a no-op), a decision round's job has its own id, a refused submit's job is taken back, a
// cancel removes only a job still queued, the depths count per mode, and a skill's job is waited
// for through the queue events.

import { createRedis, type Redis } from '@islet/core';
import { SANDBOX_MODES } from '@islet/protocol';
import { jobRunId } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobEventsStore } from './job-events-store.ts';
import { createRunQueueStore, enqueueStamp, type RunQueueStore } from './run-queue-store.ts';

let server: RedisServer;
let redis: Redis;
let store: RunQueueStore;

beforeAll(async () => {
  server = await startRedis();
  redis = createRedis(server.url);
  store = createRunQueueStore(redis, () => {});
});

afterAll(async () => {
  await store?.close();
  redis?.disconnect();
  await server?.stop();
});

describe('run queue store', () => {
  it("stamps a run's job with the enqueue time's fraction of a ms, on the wall clock", async () => {
    const job = { runId: 'r-stamp', tenant: 't', mode: 'read-only' as const, attempts: 1 };
    const before = Date.now();
    await store.enqueueRun(job);
    const after = Date.now();
    const stamped = (await store.queues['read-only'].getJob('r-stamp'))?.data.enqueuedAtMs as number;
    // The clock the runner's own stamps of the run use (`timings`), not `Date.now()`'s whole ms.
    expect(Number.isInteger(stamped)).toBe(false);
    expect(stamped).toBeGreaterThanOrEqual(before - 2);
    expect(stamped).toBeLessThanOrEqual(after + 2);
    expect(await store.takeBack('read-only', 'r-stamp')).toBe(true);
    const stamps = Array.from({ length: 50 }, enqueueStamp);
    expect(stamps.some((t) => !Number.isInteger(t))).toBe(true);
  });

  it("writes the run id in a run job's data in format 1; format 2 (the default) only where the job id is not the run's", async () => {
    const full = createRunQueueStore(redis, () => {}, false, '1');
    const lean = createRunQueueStore(redis, () => {}, false, '2');
    try {
      await full.enqueueRun({ runId: 'r-f1', tenant: 't', mode: 'read-only', attempts: 1 });
      await lean.enqueueRun({ runId: 'r-f2', tenant: 't', mode: 'read-only', attempts: 1 });
      await lean.enqueueRun({ runId: 'r-f3', tenant: 't', mode: 'read-only', attempts: 1, jobId: 'r-f3-r1' });
      await store.enqueueRun({ runId: 'r-f4', tenant: 't', mode: 'read-only', attempts: 1 });
      const data = async (id: string) =>
        JSON.parse((await redis.hget(`islet:{runs-read-only}:${id}`, 'data')) ?? 'null') as Record<
          string,
          unknown
        >;
      expect(Object.keys(await data('r-f1'))).toEqual(['runId', 'tenant', 'enqueuedAtMs']);
      expect(Object.keys(await data('r-f2'))).toEqual(['tenant', 'enqueuedAtMs']);
      expect(await data('r-f3-r1')).toMatchObject({ runId: 'r-f3', tenant: 't' });
      expect(Object.keys(await data('r-f4'))).toEqual(['tenant', 'enqueuedAtMs']);
      for (const id of ['r-f1', 'r-f2', 'r-f3-r1', 'r-f4'])
        expect(await store.takeBack('read-only', id)).toBe(true);
    } finally {
      await full.close();
      await lean.close();
    }
  });

  it("stamps the enqueue with a fraction of a ms even where the process's `performance.timeOrigin` is off", () => {
    // Node reads its origin's two parts at two moments of its start; preempted between them (a
    // loaded machine) a process keeps the gap for life (16 and 40 ms seen, round 29).
    const real = performance.timeOrigin;
    Object.defineProperty(performance, 'timeOrigin', { value: real - 30, configurable: true });
    try {
      // Each stamp bracketed by two reads of the wall clock (a preemption widens the bracket).
      const stamps = Array.from({ length: 50 }, () => {
        const lo = Date.now();
        const t = enqueueStamp();
        return [lo, t, Date.now()] as const;
      });
      expect(stamps.some(([, t]) => !Number.isInteger(t))).toBe(true);
      for (const [lo, t, hi] of stamps) {
        expect(t).toBeGreaterThanOrEqual(lo - 1);
        expect(t).toBeLessThan(hi + 2);
      }
    } finally {
      Object.defineProperty(performance, 'timeOrigin', { value: real, configurable: true });
    }
  });

  it('queues a run once under its id, a decision round under its own', async () => {
    const job = { runId: 'r-1', tenant: 't', mode: 'read-only' as const, attempts: 3 };
    await store.enqueueRun(job);
    await store.enqueueRun(job);
    await store.enqueueRun({ ...job, jobId: 'r-1-r1' });
    expect(await store.hasJob('read-only', 'r-1')).toBe(true);
    expect(await store.hasJob('read-only', 'r-1-r1')).toBe(true);
    expect(await store.hasJob('workspace-write', 'r-1')).toBe(false);
    const depths = await store.depths();
    expect(depths).toHaveLength(SANDBOX_MODES.length);
    expect(depths[SANDBOX_MODES.indexOf('read-only')]?.waiting).toBe(2);
    expect(depths[SANDBOX_MODES.indexOf('workspace-write')]?.waiting).toBe(0);
    const added = await store.queues['read-only'].getJob('r-1');
    // The run named by its job id (format 2, the default: no `runId` in the data); a decision
    // round's job by its data.
    expect(added?.data).toMatchObject({ tenant: 't' });
    expect(added && jobRunId(added)).toBe('r-1');
    const round = await store.queues['read-only'].getJob('r-1-r1');
    expect(round?.data).toMatchObject({ runId: 'r-1', tenant: 't' });
    expect(round && jobRunId(round)).toBe('r-1');
    expect(added?.opts.attempts).toBe(3);
  });

  it("takes a refused submit's job back", async () => {
    await store.enqueueRun({ runId: 'r-2', tenant: 't', mode: 'read-only', attempts: 1 });
    expect(await store.takeBack('read-only', 'r-2')).toBe(true);
    expect(await store.hasJob('read-only', 'r-2')).toBe(false);
  });

  it('removes a queued run on cancel, and tells a missing job apart', async () => {
    await store.enqueueRun({ runId: 'r-3', tenant: 't', mode: 'workspace-write', attempts: 1 });
    expect(await store.removeQueued('workspace-write', 'r-3')).toEqual({ removed: true, state: 'waiting' });
    expect(await store.removeQueued('workspace-write', 'r-3')).toEqual({ removed: false, state: 'unknown' });
  });

  it("waits for a skill job to finish with the runner's answer", async () => {
    const mode = 'danger-full-access' as const;
    const events = createJobEventsStore(redis, () => {}).open();
    const worker = new Worker(store.queues[mode].name, async (job) => `done:${job.data.runId}`, {
      connection: redis.duplicate(),
      prefix: store.queues[mode].opts.prefix,
    });
    try {
      await events.ready(mode);
      const job = await store.enqueueSkill(
        mode,
        { runId: 'skill-1', tenant: 't', enqueuedAtMs: Date.now() },
        'skill-1',
      );
      expect(await job.finished(events, 10_000)).toBe('done:skill-1');
      await job.remove();
    } finally {
      await worker.close();
      await events.close();
    }
  });
});
