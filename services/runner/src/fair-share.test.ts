/**
 * The fair-share scripts against a real redis-server: a lone tenant gets every free slot, never
 * deferred for a pool seen full, its deferrals ending with the next pick-up; under contention a
 * tenant holds its share (runners racing grant exactly it) and a quiet tenant's queued job gets
 * the slot; freed slots go round robin to tenants with deferred jobs, under their share first,
 * each tenant's own order kept; the share follows the pool's live slots, a lease that is not
 * renewed (a SIGKILLed runner) lapses, and queued counts heal.
 */
import { createLogger, createRedis, keys } from '@islet/core';
import { noteQueued } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareConfig } from '../test/share-config.ts';
import { createFairShare, type FairShareDeps } from './fair-share.ts';

let server: RedisServer;
let redis: Redis;
const logger = createLogger({ name: 'fair-share-test', level: 'silent' });
const started: Array<ReturnType<typeof createFairShare>> = [];

beforeAll(async () => {
  server = await startRedis();
  redis = createRedis(server.url);
});
afterAll(async () => {
  await Promise.all(started.map((s) => s.close()));
  redis?.disconnect();
  await server?.stop();
});

function runner(
  config: Partial<FairShareDeps['config']> = {},
  promote: FairShareDeps['promote'] = async () => true,
  queuedJobs?: FairShareDeps['queuedJobs'],
) {
  const share = createFairShare({
    redis,
    logger,
    promote,
    ...(queuedJobs ? { queuedJobs } : {}),
    config: shareConfig(config),
  });
  started.push(share);
  return share;
}

const on = { ISLET_TENANT_POOL_SHARE: 0.5, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0 };
const queued = (mode: 'read-only' | 'workspace-write' | 'danger-full-access', tenant: string, n = 1) =>
  Promise.all(Array.from({ length: n }, () => noteQueued(redis, on, mode, tenant)));
const grants = (rs: Array<{ ok: boolean }>) => rs.map((r) => r.ok);

async function clean(mode: string) {
  const found = await redis.keys(`islet:{pool:${mode}}:*`);
  if (found.length) await redis.del(...found);
}

describe('fair share', () => {
  it('a lone tenant gets every free slot; under contention three runners racing grant exactly its share', async () => {
    const runners = [runner(), runner(), runner()];
    for (const r of runners) await r.start(['read-only']);
    await queued('read-only', 'acme', 30);
    // Pool = 3 × 4 slots; nobody else waits, so each job of acme a runner took into a free slot of
    // its own is granted (the share, 6, binds only under contention).
    const alone = await Promise.all(
      Array.from({ length: 12 }, (_, i) => runners[i % 3]!.acquire('read-only', 'acme', `job-${i}`)),
    );
    expect(alone.filter((r) => r.ok)).toHaveLength(12);
    // Alone, the pool's size is not read (no limit to report).
    expect(alone[0]!.limit).toBe(0);
    for (let i = 0; i < 12; i++) await runners[i % 3]!.release('read-only', 'acme', `job-${i}`);
    // Another tenant waits: the racing acquires grant acme exactly its share, the rest deferred.
    await queued('read-only', 'other');
    const results = await Promise.all(
      Array.from({ length: 18 }, (_, i) => runners[i % 3]!.acquire('read-only', 'acme', `job-${12 + i}`)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(6);
    expect(results.find((r) => !r.ok)?.limit).toBe(6);
    expect(await redis.zcard(keys.poolTenantDeferred('read-only', 'acme'))).toBe(12);
    // Every pick-up was counted off the tenant's queued jobs.
    expect(await redis.hget(keys.poolQueued('read-only'), 'acme')).toBeNull();
    // A job that holds a lease gets it again (a stalled job taken over keeps its slot).
    const holder = 12 + results.findIndex((r) => r.ok);
    expect((await runners[1]!.acquire('read-only', 'acme', `job-${holder}`)).ok).toBe(true);
    for (const r of runners) await r.close();
    await clean('read-only');
  });

  it("under contention a flooding tenant holds its share and a quiet tenant's queued job gets the slot", async () => {
    const promoted: string[] = [];
    const r = runner({}, async (_m, id) => {
      promoted.push(id);
      return true;
    });
    await r.start(['read-only']);
    await queued('read-only', 'flood', 6);
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await r.acquire('read-only', 'flood', `f-${i}`));
    expect(grants(first)).toEqual([true, true, true, true]);
    await r.release('read-only', 'flood', 'f-0');
    expect(promoted).toEqual([]); // nothing deferred: the slot is simply free
    // quiet's job is queued behind the flood: flood (3 of 4, over its share of 2) is moved aside.
    await queued('read-only', 'quiet', 2);
    expect((await r.acquire('read-only', 'flood', 'f-4')).ok).toBe(false);
    expect((await r.acquire('read-only', 'quiet', 'q-0')).ok).toBe(true);
    expect(await redis.hget(keys.poolQueued('read-only'), 'quiet')).toBe('1');
    // With the pool full and quiet's second job waiting, flood's next job waits too; a freed slot
    // of flood's goes back to flood once quiet has nothing waiting (work-conserving; here its
    // second job was cancelled, the gateway took its count back), its oldest deferred job first.
    expect((await r.acquire('read-only', 'flood', 'f-5')).ok).toBe(false);
    await redis.hdel(keys.poolQueued('read-only'), 'quiet');
    await r.release('read-only', 'flood', 'f-1');
    expect(promoted).toEqual(['f-4']);
    expect((await r.acquire('read-only', 'flood', 'f-4')).ok).toBe(true); // its reservation
    expect(await redis.zrange(keys.poolTenantDeferred('read-only', 'flood'), 0, -1)).toEqual(['f-5']);
    await r.close();
    await clean('read-only');
  });

  it('freed slots go round robin to tenants with deferred jobs, those under their share first', async () => {
    const promoted: string[] = [];
    const r = runner({}, async (_m, id) => {
      promoted.push(id);
      return true;
    });
    await r.start(['workspace-write']);
    for (let i = 0; i < 4; i++) expect((await r.acquire('workspace-write', 'a', `a${i}`)).ok).toBe(true);
    await queued('workspace-write', 'b', 2);
    await queued('workspace-write', 'c', 1);
    // Pool full: everyone's next job is deferred, a first, then b, then c.
    for (const [t, id] of [
      ['a', 'a4'],
      ['b', 'b0'],
      ['b', 'b1'],
      ['c', 'c0'],
    ] as const) {
      expect((await r.acquire('workspace-write', t, id)).ok).toBe(false);
      await new Promise((res) => setTimeout(res, 2));
    }
    for (let i = 0; i < 4; i++) await r.release('workspace-write', 'a', `a${i}`);
    // b and c (under their share of 2) before a; b, then c (b took its turn), then a, then b again.
    expect(promoted).toEqual(['b0', 'c0', 'a4', 'b1']);
    for (const [t, id] of [
      ['b', 'b0'],
      ['c', 'c0'],
      ['a', 'a4'],
      ['b', 'b1'],
    ] as const)
      expect((await r.acquire('workspace-write', t, id)).ok).toBe(true);
    expect(await redis.zcard(keys.poolWaiting('workspace-write'))).toBe(0);
    await r.close();
    await clean('workspace-write');
  });

  it("a tenant's own order is kept: a later job granted a slot hands it to its oldest deferred job", async () => {
    const promoted: string[] = [];
    const r = runner({ ISLET_RUNNER_CONCURRENCY: 8 }, async (_m, id) => {
      promoted.push(id);
      return true;
    });
    await r.start(['read-only']);
    await queued('read-only', 'other'); // contention: o is held to its share (4 of 8)
    for (let i = 0; i < 4; i++) expect((await r.acquire('read-only', 'o', `o${i}`)).ok).toBe(true);
    for (const id of ['o4', 'o5']) {
      expect((await r.acquire('read-only', 'o', id)).ok).toBe(false);
      await new Promise((res) => setTimeout(res, 2));
    }
    // o0's lease is gone without a release (its runner died); o5's recheck wakes it first.
    await redis.zrem(keys.poolTenantLeases('read-only', 'o'), 'o0');
    await redis.zrem(keys.poolBusy('read-only'), 'o0');
    expect((await r.acquire('read-only', 'o', 'o5')).ok).toBe(false);
    await until(() => promoted.length === 1);
    expect(promoted).toEqual(['o4']);
    expect((await r.acquire('read-only', 'o', 'o4')).ok).toBe(true);
    expect(await redis.zrange(keys.poolTenantDeferred('read-only', 'o'), 0, -1)).toEqual(['o5']);
    await r.close();
    await clean('read-only');
  });

  it('alone, a tenant is never deferred for a pool seen full, and a job finding an older deferred one takes a slot for both', async () => {
    const promoted: string[] = [];
    const r = runner({}, async (_m, id) => {
      promoted.push(id);
      return true;
    });
    await r.start(['read-only']);
    const deferred = keys.poolTenantDeferred('read-only', 'l');
    const waiting = keys.poolWaiting('read-only');
    // Four busy members no runner counts a slot for (leases given back late): the count says full,
    // but the job is in its runner's own free slot and nobody else waits.
    const later = Date.now() + 60_000;
    await redis.zadd(keys.poolBusy('read-only'), later, 'g0', later, 'g1', later, 'g2', later, 'g3');
    expect((await r.acquire('read-only', 'l', 'l1')).ok).toBe(true);
    // One deferral left from before: the next pick-up runs and the older job keeps a slot too
    // (promoted), so no deferral follows from it.
    await redis.zadd(deferred, Date.now() - 5, 'old');
    await redis.zadd(waiting, Date.now() - 5, 'l');
    expect((await r.acquire('read-only', 'l', 'l2')).ok).toBe(true);
    await until(() => promoted.length === 1);
    expect(promoted).toEqual(['old']);
    expect(await redis.zcard(deferred)).toBe(0);
    expect(await redis.zcard(waiting)).toBe(0);
    expect((await redis.zrange(keys.poolTenantLeases('read-only', 'l'), 0, -1)).sort()).toEqual([
      'l1',
      'l2',
      'old',
    ]);
    expect((await r.acquire('read-only', 'l', 'old')).ok).toBe(true); // its reservation
    await r.close();
    await clean('read-only');
    // Under a cap that cannot hold both, the tenant's order: the older job gets the slot.
    const capped = runner({ ISLET_TENANT_MAX_EXECUTING_PER_POOL: 3 }, async (_m, id) => {
      promoted.push(id);
      return true;
    });
    await capped.start(['read-only']);
    for (const id of ['c1', 'c2']) expect((await capped.acquire('read-only', 'l', id)).ok).toBe(true);
    await redis.zadd(deferred, Date.now() - 5, 'old2');
    await redis.zadd(waiting, Date.now() - 5, 'l');
    expect((await capped.acquire('read-only', 'l', 'c3')).ok).toBe(false);
    await until(() => promoted.length === 2);
    expect(promoted[1]).toBe('old2');
    expect(await redis.zrange(deferred, 0, -1)).toEqual(['c3']);
    await capped.close();
    await clean('read-only');
  });

  it('off (a share of the whole pool, no cap): every job goes at once and nothing is written', async () => {
    const share = runner({ ISLET_TENANT_POOL_SHARE: 1 });
    await share.start(['read-only']);
    const tenant = 'whole-pool';
    // More than the pool's 4 slots: nothing to enforce, no lease taken.
    for (let i = 0; i < 6; i++) expect((await share.acquire('read-only', tenant, `job-${i}`)).ok).toBe(true);
    expect(await redis.exists(keys.poolTenantLeases('read-only', tenant))).toBe(0);
    await share.release('read-only', tenant, 'job-0');
    expect(await redis.exists(keys.poolTenantDeferred('read-only', tenant))).toBe(0);
    // Nor does the gateway count queued jobs.
    await noteQueued(
      redis,
      { ISLET_TENANT_POOL_SHARE: 1, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0 },
      'read-only',
      tenant,
    );
    expect(await redis.exists(keys.poolQueued('read-only'))).toBe(0);
    // A cap turns it on again: the fifth job of a tenant capped at 4 is deferred.
    const capped = runner({ ISLET_TENANT_POOL_SHARE: 1, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 4 });
    await capped.start(['read-only']);
    const got = [];
    for (let i = 0; i < 5; i++) got.push((await capped.acquire('read-only', 'capped', `c-${i}`)).ok);
    expect(got).toEqual([true, true, true, true, false]);
    await share.close();
    await capped.close();
    await clean('read-only');
  });

  it('the absolute cap applies even with the pool free, and a tenant always gets at least one slot', async () => {
    const capped = runner({ ISLET_TENANT_MAX_EXECUTING_PER_POOL: 1 });
    await capped.start(['workspace-write']);
    expect(await capped.acquire('workspace-write', 't1', 'a')).toEqual({ ok: true, limit: 0 });
    expect(await capped.acquire('workspace-write', 't1', 'b')).toEqual({ ok: false, limit: 1 });
    await capped.close();
    await clean('workspace-write');
    const tiny = runner({ ISLET_RUNNER_CONCURRENCY: 1, ISLET_TENANT_POOL_SHARE: 0.5 });
    await tiny.start(['danger-full-access']);
    await queued('danger-full-access', 'other'); // contention: the share is read and reported
    expect(await tiny.acquire('danger-full-access', 't1', 'a')).toEqual({ ok: true, limit: 1 });
    await tiny.close();
    await clean('danger-full-access');
  });

  it("a lease nobody renews (a SIGKILLed runner) lapses, and a dead runner's slots leave the pool", async () => {
    const dead = runner({ ISLET_TENANT_SHARE_LEASE_MS: 1000 });
    const live = runner({ ISLET_TENANT_SHARE_LEASE_MS: 1000 });
    await dead.start(['read-only']);
    await live.start(['read-only']);
    await queued('read-only', 'other'); // contention: z is held to its share (4 of 8)
    for (let i = 0; i < 4; i++) expect((await dead.acquire('read-only', 'z', `d-${i}`)).ok).toBe(true);
    expect((await live.acquire('read-only', 'z', 'l-0')).ok).toBe(false);
    await dead.close(); // a real SIGKILL skips this; the registration then lapses like the leases
    await redis.hset(keys.poolSlots('read-only'), 'ghost', `4:${Date.now() + 800}`);
    await new Promise((r) => setTimeout(r, 1200));
    const after = await live.acquire('read-only', 'z', 'l-0');
    expect(after).toEqual({ ok: true, limit: 2 }); // the ghost's 4 slots are gone: pool 4, share 2
    expect(await redis.hexists(keys.poolSlots('read-only'), 'ghost')).toBe(0);
    await live.release('read-only', 'z', 'l-0');
    await live.close();
    await clean('read-only');
  });

  it('a lone tenant past its share is granted without counting its leases, and a key of lapsed leases keeps the new one', async () => {
    const r = runner({ ISLET_TENANT_SHARE_LEASE_MS: 1000 });
    await r.start(['workspace-write']);
    const leases = keys.poolTenantLeases('workspace-write', 'lone');
    // Three leases a dead runner left (lapsed), their key about to expire: the share (2 of 4) is
    // passed by the raw count, but nobody else waits, so the answer is yes without pruning them.
    await redis.zadd(leases, Date.now() - 10, 'x-0', Date.now() - 10, 'x-1', Date.now() - 10, 'x-2');
    await redis.pexpire(leases, 50);
    expect(await r.acquire('workspace-write', 'lone', 'j')).toEqual({ ok: true, limit: 0 });
    expect(await redis.pttl(leases)).toBeGreaterThan(1000);
    await new Promise((res) => setTimeout(res, 100));
    expect(await redis.zscore(leases, 'j')).not.toBeNull();
    // With another tenant waiting the lapsed ones are dropped and the share decides: 1 live of 2.
    await queued('workspace-write', 'other');
    expect((await r.acquire('workspace-write', 'lone', 'k')).ok).toBe(true);
    expect(await redis.zcard(leases)).toBe(2);
    expect((await r.acquire('workspace-write', 'lone', 'l')).ok).toBe(false);
    await r.close();
    await clean('workspace-write');
  });
  it('the heartbeat keeps a held lease alive past its period and clears queued counts of an empty queue', async () => {
    let waitingInQueue = 1;
    const r = runner({ ISLET_TENANT_SHARE_LEASE_MS: 1000 }, undefined, async () => waitingInQueue);
    await r.start(['read-only']);
    await queued('read-only', 'gone', 3); // e.g. jobs removed by cancels before any pick-up
    expect((await r.acquire('read-only', 'hb', 'x')).ok).toBe(true);
    await new Promise((res) => setTimeout(res, 1800));
    expect(await redis.zscore(keys.poolTenantLeases('read-only', 'hb'), 'x')).not.toBeNull();
    expect(await redis.zscore(keys.poolBusy('read-only'), 'x')).not.toBeNull();
    expect(await redis.hget(keys.poolQueued('read-only'), 'gone')).toBe('3');
    waitingInQueue = 0;
    await until(async () => (await redis.exists(keys.poolQueued('read-only'))) === 0);
    await r.release('read-only', 'hb', 'x');
    expect(await redis.zcard(keys.poolTenantLeases('read-only', 'hb'))).toBe(0);
    await r.close();
    await clean('read-only');
  });

  it('a slot leased to a deferred job that is gone goes on to the next one', async () => {
    const promoted: string[] = [];
    const r = runner({ ISLET_RUNNER_CONCURRENCY: 2 }, async (_mode, id) => {
      promoted.push(id);
      return id !== 'second'; // 'second' was cancelled meanwhile
    });
    await r.start(['workspace-write']);
    for (const id of ['first-running', 'other-running'])
      expect((await r.acquire('workspace-write', 'p', id)).ok).toBe(true);
    await queued('workspace-write', 'other'); // contention while p's jobs are deferred
    for (const id of ['second', 'third', 'fourth']) {
      expect((await r.acquire('workspace-write', 'p', id)).ok).toBe(false);
      await new Promise((res) => setTimeout(res, 2));
    }
    await redis.hdel(keys.poolQueued('workspace-write'), 'other'); // its job cancelled: p is alone
    await r.release('workspace-write', 'p', 'first-running');
    expect(promoted).toEqual(['second', 'third']);
    expect(await redis.zrange(keys.poolTenantDeferred('workspace-write', 'p'), 0, -1)).toEqual(['fourth']);
    // 'second''s reservation was given back: p holds other-running and third's reservation.
    expect((await redis.zrange(keys.poolTenantLeases('workspace-write', 'p'), 0, -1)).sort()).toEqual([
      'other-running',
      'third',
    ]);
    await r.close();
    await clean('workspace-write');
  });

  it('a parked run gives its lease and pool slot up, and reclaims both when answered, over the share', async () => {
    const promoted: string[] = [];
    const r = runner({ ISLET_RUNNER_CONCURRENCY: 2 }, async (_m, id) => {
      promoted.push(id);
      return true;
    });
    await r.start(['danger-full-access']);
    const leases = keys.poolTenantLeases('danger-full-access', 'w');
    const busy = keys.poolBusy('danger-full-access');
    for (const id of ['held', 'other'])
      expect((await r.acquire('danger-full-access', 'w', id)).ok).toBe(true);
    await queued('danger-full-access', 'x'); // contention while w's next job is deferred
    expect((await r.acquire('danger-full-access', 'w', 'next')).ok).toBe(false);
    await redis.hdel(keys.poolQueued('danger-full-access'), 'x'); // its job cancelled: w is alone
    // `held` parks: its slot goes to the tenant's deferred job.
    await r.release('danger-full-access', 'w', 'held');
    expect(promoted).toEqual(['next']);
    expect((await r.acquire('danger-full-access', 'w', 'next')).ok).toBe(true);
    // Answered, it takes its lease and its place among the busy slots back, the pool full or not.
    await r.reclaim('danger-full-access', 'w', 'held');
    expect((await redis.zrange(leases, 0, -1)).sort()).toEqual(['held', 'next', 'other']);
    expect((await redis.zrange(busy, 0, -1)).sort()).toEqual(['held', 'next', 'other']);
    await r.release('danger-full-access', 'w', 'held');
    expect(await redis.zscore(busy, 'held')).toBeNull();
    await r.close();
    await clean('danger-full-access');
  });
});

async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
