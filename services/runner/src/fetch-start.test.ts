/**
 * On one server a worker's fetch also takes its run's lease and begins its attempt
 * (fetch-start-store.ts): between the job's add (its marker wakes the worker) and the run's own
 * work, Redis runs one script call, not BullMQ's fetch and then the attempt's start. A refused
 * lease still writes nothing of the run and defers the job as before; a skill's job takes its lease
 * apart as before. Real redis-server, real BullMQ, real fair share, run store and journal; the
 * calls are read from MONITOR (their order and names), never from time.
 */
import { keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { noteQueued, runJobOptions } from '@islet/runs';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { mode, onRunnerHarness, scriptsBeforeWork, until } from '../test/runner-harness.ts';
import { createFairShare } from './fair-share.ts';
import { isBakedFetchSha, isFetchStartSha } from './fetch-start-store.ts';
import { isClaimDrainedSha } from './queue-drain-store.ts';
import type { SkillExecutor } from './skill-executor.ts';

let redis: Redis;
const h = onRunnerHarness('fetch-start-test', (up) => {
  ({ redis } = up);
});
const { logger, newRun, monitor, setUp, warmUp } = h;

describe('a fetch that starts its run (one server)', () => {
  it('the pick-up is one script call after the add: the fetch took the lease and began the attempt', async () => {
    const t = await setUp('fused', true);
    try {
      // Loads the scripts, so the calls counted below are the path's own (no NOSCRIPT retry).
      await warmUp(t, 'warm');

      await newRun('f1');
      const m = await monitor();
      try {
        await t.add('f1');
        await until('f1 to complete', async () => t.outcomes.length === 2);
      } finally {
        await m.stop();
      }
      // The add's script, then the fused fetch: nothing else ran a script before the run's work.
      const scripts = scriptsBeforeWork(m.seen, 'f1');
      expect(scripts).toHaveLength(2);
      expect(isBakedFetchSha(scripts[1])).toBe(true);
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
      // The start as the attempt's script writes it: Running, counted, its event, then the end's
      // release (nothing left leased).
      expect(await redis.hget(keys.run('f1'), 'attempts')).toBe('1');
      expect(await redis.hget(keys.run('f1'), 'status')).toBe('Completed');
      // A first start writes no journal: the record's count fences it.
      expect(await redis.exists('islet:journal:{f1}')).toBe(0);
      const events = await redis.xrange(keys.runEvents('f1'), '-', '+');
      expect(events.some(([, f]) => f.includes('attempt') && f[f.indexOf('attempt') + 1] === '1')).toBe(true);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      expect(await redis.zcard(keys.poolTenantLeases(mode, 'acme'))).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('a fetch that leaves the queue drained spares the next fetch its look: the worker blocks on the marker at once', async () => {
    const t = await setUp('behind', true);
    try {
      await warmUp(t, 'warm3');
      await newRun('b1');
      const before = { byFetch: t.worker().drainedByFetch, probes: t.worker().drainedProbes };
      const m = await monitor();
      try {
        await t.add('b1');
        await until('b1 to complete', async () => t.outcomes.length === 2);
        await until('the worker to block again', async () => t.worker().drainedByFetch > before.byFetch);
        // BullMQ's completion goes out after the run's end; the worker's next blocking pop after it.
        await until('its blocking pop', async () =>
          m.sent.some((c, i) => c[0] === 'bzpopmin' && i > m.sent.findIndex((d) => d[0] === 'echo')),
        );
      } finally {
        await m.stop();
      }
      // The fused fetch, then no look (MULTI with LLEN, ZCARD, ZREM) from the worker: it blocked.
      expect(m.sent.some((c) => c[0] === 'evalsha' && isFetchStartSha(c[1]))).toBe(true);
      expect(m.sent.filter((c) => c[0] === 'multi' || c[0] === 'llen')).toEqual([]);
      expect(t.worker().drainedByFetch).toBe(before.byFetch + 1);
      expect(t.worker().drainedProbes).toBe(before.probes);
      // The marker the fetch re-added was dropped in the fetch: none is left to wake the worker.
      expect(await redis.zscore(`${QUEUE_PREFIX}:${runQueueName(mode)}:marker`, '0')).toBeNull();
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
    } finally {
      await t.close();
    }
  });

  it('a fetch with a job behind its own keeps the ready marker for other workers (one slot, held)', async () => {
    const marker = `${QUEUE_PREFIX}:${runQueueName(mode)}:marker`;
    let release = () => {};
    const hold = new Promise<void>((r) => {
      release = r;
    });
    const t = await setUp('marker', true, undefined, { slots: 1, hold });
    try {
      for (const id of ['m1', 'm2']) await newRun(id);
      // Two jobs in one write: the fetch takes m1 with m2 behind it, and m1 holds the only slot.
      await t.queue.addBulk(
        ['m1', 'm2'].map((id) => ({
          name: 'run',
          data: { runId: id, tenant: 'acme', enqueuedAtMs: Date.now() },
          opts: runJobOptions(id, 1),
        })),
      );
      await until('m1 to start', async () => (await redis.hget(keys.run('m1'), 'attempts')) === '1');
      // Kept for other workers: a job still waits (and the fetch said so: no look is spared).
      expect(await redis.zscore(marker, '0')).not.toBeNull();
      expect(t.worker().drainedByFetch).toBe(0);
      release();
      await until('m1 and m2 to complete', async () => (await t.queue.getCompletedCount()) === 2);
    } finally {
      release();
      await t.close();
    }
  });

  it('without it (an executor that does not start runs in fetches), the same pick-up takes two script calls', async () => {
    const t = await setUp('apart', false);
    try {
      await warmUp(t, 'warm2');
      await newRun('a1');
      const m = await monitor();
      try {
        await t.add('a1');
        await until('a1 to complete', async () => t.outcomes.length === 2);
      } finally {
        await m.stop();
      }
      // The worker's look at the queue before it blocks (claimDrained, a script since round 51; a
      // MULTI before) is not the pick-up's.
      const scripts = scriptsBeforeWork(m.seen, 'a1').filter((sha) => !isClaimDrainedSha(sha));
      expect(scripts).toHaveLength(3);
      expect(scripts.some(isFetchStartSha)).toBe(false);
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
    } finally {
      await t.close();
    }
  });

  it('a refused lease writes nothing of the run and defers the job without spending an attempt', async () => {
    const t = await setUp('refused', true);
    try {
      // acme holds its share (two leases of four slots) while another tenant has work queued.
      const fair = createFairShare({ redis, logger, promote: async () => true, config: t.config });
      for (const id of ['x1', 'x2']) expect((await fair.acquire(mode, 'acme', id)).ok).toBe(true);
      await noteQueued(redis, t.config, mode, 'other');
      await newRun('f3');
      const record = await redis.hgetall(keys.run('f3'));
      const m = await monitor();
      try {
        await t.add('f3', 'acme', 2);
        await until('f3 to be deferred', async () => (await t.queue.getDelayedCount()) === 1);
      } finally {
        await m.stop();
      }
      // It went through the fused fetch, which refused it and moved it to delayed in the same
      // script: no call the runner sent after the fetch's (a moveToDelayed of its own), the
      // processor never had it (no outcome), the worker never held it (BullMQ's lock deleted
      // with the move), and as BullMQ's moveToDelayed with skipAttempt leaves it: no attempt
      // spent, due after the recheck.
      const fetchAt = m.sent.findIndex((c) => c[0] === 'evalsha' && isFetchStartSha(c[1]));
      expect(fetchAt).toBeGreaterThanOrEqual(0);
      const delayed = t.queue.keys.delayed;
      const moveAt = m.seen.findIndex((c) => c[0] === 'zadd' && c[1] === delayed && c[3] === 'f3');
      const callAt = m.seen.indexOf(m.sent[fetchAt] ?? []);
      expect(moveAt).toBeGreaterThan(callAt);
      expect(m.seen.slice(callAt + 1, moveAt).every((c) => !m.sent.includes(c))).toBe(true);
      expect(t.outcomes).toEqual([]);
      expect(await redis.exists(`${t.queue.qualifiedName}:f3:lock`)).toBe(0);
      expect(await redis.lrange(`${t.queue.qualifiedName}:active`, 0, -1)).toEqual([]);
      const job = await t.queue.getJob('f3');
      expect(job?.attemptsMade).toBe(0);
      expect(await redis.hget(`${t.queue.qualifiedName}:f3`, 'delay')).toBe('60000');
      expect(await t.queue.getJobState('f3')).toBe('delayed');
      expect(await redis.hgetall(keys.run('f3'))).toEqual(record);
      expect(await redis.exists('islet:journal:{f3}')).toBe(0);
      expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'f3')).not.toBeNull();
      expect(await redis.zscore(keys.poolTenantLeases(mode, 'acme'), 'f3')).toBeNull();
      const deferrals = await t.metrics.registry.getSingleMetricAsString(
        'islet_tenant_share_deferrals_total',
      );
      expect(deferrals).toMatch(/islet_tenant_share_deferrals_total\{[^}]*mode="read-only"[^}]*\} 1/);
    } finally {
      await t.close();
    }
  });

  it('a job taken over from a dead runner keeps its lease and counts its next attempt', async () => {
    const t = await setUp('redelivered', true);
    try {
      // What a runner killed mid-run leaves: its lease (the member is the job id) and one attempt.
      await newRun('f5');
      const now = (await redis.time())[0];
      const leaseUntil = Number(now) * 1000 + 30_000;
      await redis.zadd(keys.poolTenantLeases(mode, 'acme'), leaseUntil, 'f5');
      await redis.zadd(keys.poolBusy(mode), leaseUntil, 'f5');
      await redis.hset('islet:journal:{f5}', '#attempt', '1');
      await redis.hset(keys.run('f5'), 'attempts', '1');
      const m = await monitor();
      try {
        await t.add('f5');
        await until('f5 to complete', async () => t.outcomes.length === 1);
      } finally {
        await m.stop();
      }
      expect(m.seen.some((c) => c[0] === 'evalsha' && isFetchStartSha(c[1]))).toBe(true);
      expect(t.outcomes).toEqual(['completed 2']);
      expect(await redis.hget(keys.run('f5'), 'attempts')).toBe('2');
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await t.close();
    }
  });

  it("a skill's job is fetched as BullMQ's and takes its lease apart, given back at its end", async () => {
    const ran: string[] = [];
    const skills = (async (job: { id: string }) => {
      ran.push(job.id);
      expect(await redis.zscore(keys.poolBusy(mode), job.id)).not.toBeNull();
      return 'sealed';
    }) as unknown as SkillExecutor;
    const t = await setUp('skill', true, skills);
    try {
      await t.queue.add(
        'skill',
        { runId: 'skill-1', tenant: 'acme', enqueuedAtMs: Date.now(), skill: { sealedRequest: 'x' } },
        { jobId: 'skill-1' },
      );
      await until('the skill to complete', async () => (await t.queue.getCompletedCount()) === 1);
      expect(ran).toEqual(['skill-1']);
      expect(await redis.exists('islet:journal:{skill-1}')).toBe(0);
      await until('its lease given back', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
    } finally {
      await t.close();
    }
  });
});
