/**
 * A tenant's own order on the paths where the runner promotes a reserved job (a Cluster, a skill,
 * a paused or capped queue, a refusal past the fused fetch's moves) and where a reservation is
 * given up untaken (test/bench/README.md, round 27, `fair-order`):
 * - the runner's promote puts the job where the end's own script puts the one it promotes (the
 *   end of the wait list the next fetch pops): a tenant's reserved job is fetched before its
 *   younger jobs queued meanwhile. Promoted to the other end (BullMQ's promote, until round 27) a
 *   younger job of the tenant was fetched and granted first;
 * - a reservation given up (its job still active when the promote gave up, or its lease lapsed)
 *   puts its job back in its first place in its tenant's deferred set: until round 27 it was
 *   deferred again with a new score, behind the jobs deferred since.
 * Real redis-server and Redis Cluster (testkit), real BullMQ queue and fetches, the real fair share
 * and the runner's own promote.
 */
import { keys, type Redis } from '@islet/core';
import { LEASE_RELEASE, noteQueued, releaseCall } from '@islet/runs';
import { describe, expect, it } from 'vitest';
import { describeRedis } from '../test/describe-redis.ts';
import { bothAtShare, mode, on, queued, setUpQueue as setUp } from '../test/reserved-queue.ts';

/**
 * acme and beta each at their share (2 of 4 slots: the pool full); acme's `a3` fetched, refused
 * and moved to delayed (as its runner's processor does on a Cluster); acme's `a4`, `a5` queued
 * after it. acme's two leases end: the first release reserves the freed slot for `a3` and the runner
 * promotes it; then a worker fetches. `a3` holds acme's reservation and is its oldest job: it must be
 * fetched before `a4`. Fetched after them (the base: BullMQ's promote, the far end of the wait
 * list), `a4` found acme at 1 of 2 (the reservation alone) and was granted before `a3`.
 */
async function promotedReservationOrder(redis: Redis): Promise<void> {
  const s = await setUp(redis);
  try {
    for (const t of ['acme', 'beta']) await noteQueued(redis, on, mode, t);
    await bothAtShare(s);
    await s.add('a3', 'acme');
    await s.add('a4', 'acme');
    await s.add('a5', 'acme');
    await s.add('b3', 'beta');
    await queued(redis, 'acme', 2);
    await queued(redis, 'beta', 2);
    expect(await s.fetch()).toBe('a3');
    expect((await s.acquire('acme', 'a3')).ok).toBe(false);
    const a3 = await s.queue.getJob('a3');
    await a3?.moveToDelayed(Date.now() + 60_000, 'token');
    expect(await s.queue.getJobState('a3')).toBe('delayed');
    // acme's leases end: the first release reserves the slot for a3 and promotes it; the second finds
    // nothing of acme deferred.
    await s.share.release(mode, 'acme', 'a1');
    await s.share.release(mode, 'acme', 'a2');
    expect(await s.queue.getJobState('a3')).toBe('waiting');
    // The fetches, each with its acquire as a runner makes it, until acme's three jobs were taken.
    const fetched: string[] = [];
    const granted: string[] = [];
    while (fetched.filter((id) => id.startsWith('a')).length < 3) {
      const id = await s.fetch();
      if (!id) break;
      fetched.push(id);
      if ((await s.acquire(id.startsWith('a') ? 'acme' : 'beta', id)).ok) granted.push(id);
    }
    // a3 fetched next and granted its reservation; acme's younger jobs after it (a4 in the slot
    // acme has left, a5 refused at 2).
    expect(fetched[0]).toBe('a3');
    expect(granted.filter((id) => id.startsWith('a'))).toEqual(['a3', 'a4']);
    expect(await s.deferred('acme')).toEqual(['a5']);
  } finally {
    await s.close();
  }
}

/**
 * acme at its share with `d1`, `d2`, `d3` deferred in that order, `d1` still active (its runner's
 * move to delayed has not landed), the other two delayed. A release reserves the freed slot for
 * `d1`; its promote gives up (still active), so the slot goes on to `d2`. `d1` must stay first in
 * acme's line: when its move lands and its recheck defers it again, it is still ahead of `d3`, and
 * the next slot is its.
 */
async function givenUpReservationOrder(redis: Redis): Promise<void> {
  const s = await setUp(redis);
  try {
    for (const t of ['acme', 'beta']) await noteQueued(redis, on, mode, t);
    await bothAtShare(s);
    await queued(redis, 'beta', 5);
    for (const id of ['d1', 'd2', 'd3']) await s.add(id, 'acme');
    for (const id of ['d1', 'd2', 'd3']) {
      expect(await s.fetch()).toBe(id);
      expect((await s.acquire('acme', id)).ok).toBe(false);
    }
    for (const id of ['d2', 'd3'])
      await (await s.queue.getJob(id))?.moveToDelayed(Date.now() + 60_000, 'token');
    const first = await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'd1');
    expect(await s.deferred('acme')).toEqual(['d1', 'd2', 'd3']);
    // a1 ends: the slot is reserved for d1, whose promote finds it active every time and gives up;
    // the slot goes on to d2 (promoted).
    await s.share.release(mode, 'acme', 'a1');
    expect(await s.queue.getJobState('d1')).toBe('active');
    expect(await s.queue.getJobState('d2')).toBe('waiting');
    // d1's runner moves it now; its recheck fetches it and it is refused again (acme: a2 and d2's
    // reservation).
    await (await s.queue.getJob('d1'))?.moveToDelayed(Date.now() + 60_000, 'token');
    expect((await s.acquire('acme', 'd1')).ok).toBe(false);
    // First in acme's line, with its first score; a2's end leases the next slot to it, not to d3.
    expect(await s.deferred('acme')).toEqual(['d1', 'd3']);
    expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'd1')).toBe(first);
    await s.share.release(mode, 'acme', 'a2');
    expect(await s.queue.getJobState('d1')).toBe('waiting');
    expect(await s.deferred('acme')).toEqual(['d3']);
    // Taken (its acquire finds the reservation), nothing of its place is left; no attempt spent.
    expect((await s.acquire('acme', 'd1')).ok).toBe(true);
    expect(await redis.zcard(keys.poolTenantReserved(mode, 'acme'))).toBe(1); // d2's, not taken yet
    expect((await s.queue.getJob('d1'))?.attemptsMade).toBe(0);
  } finally {
    await s.close();
  }
}

/**
 * A reservation whose lease lapses untaken (its runner died between the release and the promote,
 * or its job was not fetched within a lease): the next acquire of its tenant that sees the lapse
 * puts the job back in its first place, ahead of the tenant's jobs deferred since.
 */
async function lapsedReservationOrder(redis: Redis): Promise<void> {
  const s = await setUp(redis, 1000);
  try {
    for (const t of ['acme', 'beta']) await queued(redis, t);
    await bothAtShare(s);
    await queued(redis, 'beta', 5);
    for (const id of ['d1', 'd2']) expect((await s.acquire('acme', id)).ok).toBe(false);
    const first = await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'd1');
    // a1's end reserves the slot for d1 in its own script (the end's release), and its runner dies
    // before promoting it: that lease is never renewed (the others are, by the share's heartbeat).
    const call = releaseCall({ mode, tenant: 'acme', jobId: 'a1', share: 0.5, cap: 0, leaseMs: 1000 });
    expect(await LEASE_RELEASE.run(redis, call.keys, call.args)).toEqual(['d1', 'acme']);
    expect(await s.deferred('acme')).toEqual(['d2']);
    // acme's d3 deferred meanwhile, and the pool's fourth slot taken again (a parked run's reclaim).
    expect((await s.acquire('acme', 'd3')).ok).toBe(false);
    await s.share.reclaim(mode, 'beta', 'b3');
    await new Promise((r) => setTimeout(r, 1500));
    // The next acquire of acme (d4, refused: the pool is full) sees d1's lapsed reservation: d1 is
    // back, first in acme's line, with its first score.
    expect((await s.acquire('acme', 'd4')).ok).toBe(false);
    expect(await s.deferred('acme')).toEqual(['d1', 'd2', 'd3', 'd4']);
    expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'd1')).toBe(first);
    // The next freed slot is d1's.
    const next = releaseCall({ mode, tenant: 'beta', jobId: 'b1', share: 0.5, cap: 0, leaseMs: 1000 });
    expect(await LEASE_RELEASE.run(redis, next.keys, next.args)).toEqual(['d1', 'acme']);
    expect(await redis.zscore(keys.poolTenantReserved(mode, 'acme'), 'd1')).toBe(first);
  } finally {
    await s.close();
  }
}

/**
 * A reservation its job took (fetched on its recheck, its acquire found the reservation) while a
 * promote of it saw it active and gave up: the promote cannot tell that job from one refused and not
 * yet moved. The give-up must leave the running job's lease alone: released, acme would run one
 * job over its share and the running job would be listed as deferred.
 */
async function takenReservationGivenUp(redis: Redis): Promise<void> {
  const s = await setUp(redis);
  try {
    for (const t of ['acme', 'beta']) await noteQueued(redis, on, mode, t);
    await bothAtShare(s);
    await queued(redis, 'beta', 5);
    await s.add('d1', 'acme');
    expect(await s.fetch()).toBe('d1');
    expect((await s.acquire('acme', 'd1')).ok).toBe(false);
    await (await s.queue.getJob('d1'))?.moveToDelayed(Date.now() + 60_000, 'token');
    // a1's end reserves its slot for d1 (promoted), which is fetched and takes the reservation.
    await s.share.release(mode, 'acme', 'a1');
    expect(await s.fetch()).toBe('d1');
    expect((await s.acquire('acme', 'd1')).ok).toBe(true);
    const leases = keys.poolTenantLeases(mode, 'acme');
    expect((await redis.zrange(leases, 0, -1)).sort()).toEqual(['a2', 'd1']);
    // A promote of d1 that found it active gives the reservation up ('back'): nothing happens.
    const call = releaseCall(
      { mode, tenant: 'acme', jobId: 'd1', share: 0.5, cap: 0, leaseMs: 30_000 },
      'back',
    );
    expect(await LEASE_RELEASE.run(redis, call.keys, call.args)).toBeNull();
    expect((await redis.zrange(leases, 0, -1)).sort()).toEqual(['a2', 'd1']);
    expect(await redis.zscore(keys.poolBusy(mode), 'd1')).not.toBeNull();
    expect(await s.deferred('acme')).toEqual([]);
    // acme is at its share still: its next job is refused.
    expect((await s.acquire('acme', 'd2')).ok).toBe(false);
  } finally {
    await s.close();
  }
}

describe('a tenant’s order around reservations, one redis-server', () => {
  const redis = describeRedis('server');

  it('a job the runner promotes into its reserved slot is fetched before its tenant’s younger jobs', async () => {
    await promotedReservationOrder(redis());
  });
  it('a reservation given up while its job is still active puts the job back first in its tenant’s line', async () => {
    await givenUpReservationOrder(redis());
  });
  it('a reservation that lapses untaken puts its job back first in its tenant’s line', async () => {
    await lapsedReservationOrder(redis());
  });
  it('a reservation its job already took is not given up by a promote that saw the job active', async () => {
    await takenReservationGivenUp(redis());
  });
});

describe('a tenant’s order around reservations, a real Redis Cluster', () => {
  const redis = describeRedis('cluster');

  it('the runner’s promote (every promotion on a Cluster) puts the reserved job before its tenant’s younger jobs', async () => {
    await promotedReservationOrder(redis());
  });
  it('a given-up reservation keeps its job’s place on a Cluster', async () => {
    await givenUpReservationOrder(redis());
  });
});
