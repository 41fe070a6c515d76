/**
 * A tenant's own order on the fair share's remaining edges (test/bench/README.md, round 28,
 * `fair-edges`; round 27's `fair-order` left them):
 * - two reservations the runner promotes before any fetch are fetched in the order they were made
 *   (both go to the fetched end of the wait list: pushed there one after the other, the later was
 *   fetched first);
 * - a deferred job whose recheck (BullMQ's promotion of due delayed jobs: the far end of the wait
 *   list) lands before its reservation's promote is still fetched before its tenant's younger jobs
 *   (the promote found it waiting and left it behind the backlog);
 * - a reservation whose tenant's leases key expired before anyone saw the lease lapse puts its job
 *   back in its first place (its kept score was never read: the job lost its place to its tenant's
 *   younger deferred jobs).
 * Real redis-server and Redis Cluster (testkit), real BullMQ queue and fetches, the real fair share
 * and lease scripts, the runner's own promote.
 */
import { keys, type Redis } from '@islet/core';
import { acquireCall, LEASE_ACQUIRE, LEASE_RELEASE, leaseAnswerOf, releaseCall } from '@islet/runs';
import { describe, expect, it } from 'vitest';
import { describeRedis } from '../test/describe-redis.ts';
import { bothAtShare as bothFull, mode, queued, setUpQueue } from '../test/reserved-queue.ts';
import type { RunnerContext } from './runner-context.ts';
import { promote } from './tenant-slot.ts';

const terms = (tenant: string, jobId: string, leaseMs: number) => ({
  mode,
  tenant,
  jobId,
  share: 0.5,
  cap: 0,
  leaseMs,
});

/** A lease script called as the runner's scripts call it, without the share's heartbeat behind it. */
async function rawAcquire(redis: Redis, tenant: string, jobId: string, leaseMs: number) {
  const call = acquireCall(terms(tenant, jobId, leaseMs));
  return leaseAnswerOf(await LEASE_ACQUIRE.run(redis, call.keys, call.args));
}
async function rawRelease(redis: Redis, tenant: string, jobId: string, leaseMs: number) {
  const call = releaseCall(terms(tenant, jobId, leaseMs));
  return LEASE_RELEASE.run(redis, call.keys, call.args);
}

/** The shared queue and share (`test/reserved-queue.ts`), with a refusal and a drain as a runner makes them. */
async function setUp(redis: Redis, leaseMs = 30_000) {
  const base = await setUpQueue(redis, leaseMs);
  const { queue, fetch, acquire } = base;
  /** Fetched, refused and moved to delayed as its runner's processor does (a Cluster's path). */
  const refuse = async (id: string, tenant: string, delayMs = 60_000) => {
    expect(await fetch()).toBe(id);
    expect((await acquire(tenant, id)).ok).toBe(false);
    await (await queue.getJob(id))?.moveToDelayed(Date.now() + delayMs, 'token');
  };
  /** Fetches, each with its acquire as a runner makes it, until `n` of acme's jobs were fetched. */
  const drain = async (n: number) => {
    const fetched: string[] = [];
    const granted: string[] = [];
    while (fetched.filter((id) => id.startsWith('a') || id.startsWith('d')).length < n) {
      const id = await fetch();
      if (!id) break;
      fetched.push(id);
      if ((await acquire(id.startsWith('b') ? 'beta' : 'acme', id)).ok) granted.push(id);
    }
    return { fetched, granted };
  };
  return { ...base, refuse, drain };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

/** acme (`a1`, `a2`) and beta (`b1`, `b2`) each at their share: the pool's 4 slots full, beta's work queued. */
async function bothAtShare(redis: Redis, s: Setup): Promise<void> {
  for (const t of ['acme', 'beta']) await queued(redis, t);
  await bothFull(s);
  // beta's work still waiting: acme is under contention, held to its share.
  await queued(redis, 'beta', 3);
}

/**
 * acme's `d1` and `d2` deferred in that order, beta's `b3` queued behind. acme's two leases end:
 * the slots are reserved for `d1`, then `d2`, each promoted by the runner before anything is
 * fetched. They must be fetched `d1` first: one push after the other to the fetched end put `d2`
 * where the next fetch pops (last in, first out).
 */
async function twoPromotionsInOrder(redis: Redis): Promise<void> {
  const s = await setUp(redis);
  try {
    await bothAtShare(redis, s);
    await s.add('d1', 'acme');
    await s.add('d2', 'acme');
    await queued(redis, 'acme', 2);
    await s.refuse('d1', 'acme');
    await s.refuse('d2', 'acme');
    await s.add('b3', 'beta');
    await queued(redis, 'beta');
    await s.share.release(mode, 'acme', 'a1');
    await s.share.release(mode, 'acme', 'a2');
    expect(await s.queue.getJobState('d1')).toBe('waiting');
    expect(await s.queue.getJobState('d2')).toBe('waiting');
    const { fetched, granted } = await s.drain(2);
    expect(fetched).toEqual(['d1', 'd2']);
    expect(granted).toEqual(['d1', 'd2']);
    // The backlog behind them untouched, next.
    expect(await s.fetch()).toBe('b3');
    for (const id of ['d1', 'd2']) expect((await s.queue.getJob(id))?.attemptsMade).toBe(0);
  } finally {
    await s.close();
  }
}

/**
 * acme's `d1` deferred with a short recheck; acme's `a3`, `a4` and beta's `b3` queued behind it.
 * acme's `a1` ends and its end's release reserves the slot for `d1`; before the runner's promote
 * lands, `d1`'s recheck is due and a worker's fetch (BullMQ's promotion of due delayed jobs) moves
 * it to the far end of the wait list, behind `a4`. The promote then must still put `d1` where the
 * next fetch pops: fetched after `a3` (acme holds one lease of its two, the reservation), `a3` was
 * granted before its tenant's older job.
 */
async function recheckBeforePromote(redis: Redis): Promise<void> {
  const s = await setUp(redis);
  try {
    await bothAtShare(redis, s);
    await s.add('d1', 'acme');
    await queued(redis, 'acme');
    await s.refuse('d1', 'acme', 100);
    await s.add('b3', 'beta');
    await s.add('a3', 'acme');
    await s.add('a4', 'acme');
    await queued(redis, 'acme', 2);
    await queued(redis, 'beta');
    // a1's end reserves the slot for d1 (its runner's promote not landed yet); a2's end finds nothing
    // of acme's deferred.
    expect(await rawRelease(redis, 'acme', 'a1', 30_000)).toEqual(['d1', 'acme']);
    expect(await rawRelease(redis, 'acme', 'a2', 30_000)).toBeNull();
    await new Promise((r) => setTimeout(r, 150));
    // The recheck: the next fetch promotes d1 (to the far end) and takes beta's b3 (refused).
    await s.refuse('b3', 'beta');
    expect(await s.queue.getJobState('d1')).toBe('waiting');
    // The runner's promote of d1 lands.
    const ctx = {
      modeWorkers: new Map([[mode, { connection: redis, queue: s.queue }]]),
    } as unknown as RunnerContext;
    expect(await promote(ctx, mode, 'd1')).toBe(true);
    const { fetched, granted } = await s.drain(3);
    expect(fetched).toEqual(['d1', 'a3', 'a4']);
    expect(granted).toEqual(['d1', 'a3']);
    expect(await s.deferred('acme')).toEqual(['a4']);
    expect((await s.queue.getJob('d1'))?.attemptsMade).toBe(0);
  } finally {
    await s.close();
  }
}

/**
 * Lease 1 s. beta holds three slots (renewed by the share's heartbeat), acme one (`a1`, never
 * renewed: its runner is gone); acme's `d1`, `d2` deferred in that order. `a1`'s end reserves the
 * slot for `d1` and its runner dies before promoting: nothing renews acme's leases key, which
 * expires (two lease periods) with the lapsed reservation in it, unseen. `next` is what acme's line
 * meets next (its next acquire, or a release's grant): `d1` must be first in it again.
 */
async function unseenLapse(redis: Redis, next: (s: Setup) => Promise<unknown>): Promise<void> {
  const leaseMs = 1000;
  const s = await setUp(redis, leaseMs);
  try {
    for (const t of ['acme', 'beta']) await queued(redis, t, 3);
    expect((await s.acquire('beta', 'b1')).ok).toBe(true);
    expect((await s.acquire('beta', 'b2')).ok).toBe(true);
    await s.share.reclaim(mode, 'beta', 'b3');
    expect((await rawAcquire(redis, 'acme', 'a1', leaseMs)).ok).toBe(true);
    for (const id of ['d1', 'd2']) expect((await rawAcquire(redis, 'acme', id, leaseMs)).ok).toBe(false);
    const first = await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'd1');
    expect(await rawRelease(redis, 'acme', 'a1', leaseMs)).toEqual(['d1', 'acme']);
    expect(await s.deferred('acme')).toEqual(['d2']);
    // Two lease periods and more with no live lease of acme's: until round 28 its leases key expired
    // then, the lapsed reservation in it.
    await new Promise((r) => setTimeout(r, 2 * leaseMs + 400));
    const answer = await next(s);
    return void (await check(answer, first));
  } finally {
    await s.close();
  }

  async function check(answer: unknown, first: string | null) {
    // d1 got the slot, with its first place kept for it; d2 still next in acme's line.
    expect(answer).toEqual(['d1', 'acme']);
    expect(await redis.zscore(keys.poolTenantReserved(mode, 'acme'), 'd1')).toBe(first);
    expect((await redis.zrange(keys.poolTenantLeases(mode, 'acme'), 0, -1)).includes('d1')).toBe(true);
    expect((await redis.zrange(keys.poolTenantDeferred(mode, 'acme'), 0, 0))[0]).toBe('d2');
  }
}

describe('a tenant’s order on the fair share’s edges, one redis-server', () => {
  const redis = describeRedis('server');

  it('two reservations promoted before any fetch are fetched in the order they were made', async () => {
    await twoPromotionsInOrder(redis());
  });
  it('a reserved job its recheck moved to the far end is fetched before its tenant’s younger jobs', async () => {
    await recheckBeforePromote(redis());
  });
  it('a reservation lapsed with no live lease of its tenant’s for two lease periods is first again at its tenant’s next acquire', async () => {
    await unseenLapse(redis(), async () => {
      // acme's d3, refused (the pool is full of beta's three and the lapsed reservation, dropped now:
      // acme is under its share, but its oldest deferred job takes the slot).
      const a = await rawAcquire(redis(), 'acme', 'd3', 1000);
      expect(a.ok).toBe(false);
      return [a.swapped, 'acme'];
    });
  });
  it('a reservation lapsed with no live lease of its tenant’s for two lease periods is first again at the next release’s grant', async () => {
    await unseenLapse(redis(), () => rawRelease(redis(), 'beta', '', 1000));
  });
});

describe('a tenant’s order on the fair share’s edges, a real Redis Cluster', () => {
  const redis = describeRedis('cluster');

  it('two reservations the runner promotes keep their order on a Cluster', async () => {
    await twoPromotionsInOrder(redis());
  });
  it('a reserved job its recheck moved keeps its reservation’s place on a Cluster', async () => {
    await recheckBeforePromote(redis());
  });
});
