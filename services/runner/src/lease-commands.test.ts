/**
 * What a run's lease and attempt start (lease-and-begin-9, the same includes as the fetch's
 * fetch-lease-begin-11) run inside Redis, counted by `INFO commandstats`, and every read or write
 * they skip tried where it would have mattered: another tenant listed past the first two waiting,
 * another tenant only deferred (no queued count), a lease key a SIGKILLed runner left with no
 * expiry, a key whose only other lease lapsed, a second attempt's journal.
 */

import { keys } from '@islet/core';
import { createCallJournal, noteQueued } from '@islet/runs';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { commandStats } from '../test/run-backlog.ts';
import { done, mode, onRunnerHarness, until } from '../test/runner-harness.ts';
import { shareConfig } from '../test/share-config.ts';
import { createFairShare, type FairShareDeps } from './fair-share.ts';

let redis: Redis;
const h = onRunnerHarness('lease-commands-test', (up) => {
  ({ redis } = up);
});
const { logger, sealer, lifecycle, newRun } = h;

const on = { ISLET_TENANT_POOL_SHARE: 0.5, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0 };

function share(promote: FairShareDeps['promote'] = async () => true, leaseMs = 30_000) {
  const s = createFairShare({
    redis,
    logger,
    promote,
    config: shareConfig({ ISLET_TENANT_SHARE_LEASE_MS: leaseMs, ...on }),
  });
  h.onClose(() => s.close());
  return s;
}

/** The commands `fn` made Redis run, by name, and their sum. */
async function counted(fn: () => Promise<unknown>): Promise<{ by: Record<string, number>; total: number }> {
  const before = await commandStats(redis);
  await fn();
  const after = await commandStats(redis);
  const by: Record<string, number> = {};
  let total = 0;
  for (const [name, calls] of after) {
    const n = calls - (before.get(name) ?? 0);
    if (n > 0 && name !== 'info') {
      by[name] = n;
      total += n;
    }
  }
  return { by, total };
}

const leases = (tenant = 'acme') => keys.poolTenantLeases(mode, tenant);

async function clean() {
  const found = await redis.keys(`islet:{pool:${mode}}:*`);
  if (found.length) await redis.del(...found);
}

/** A run's lease and attempt start in one script, as the runner's executor takes them. */
async function leaseAndBegin(fair: ReturnType<typeof share>, id: string, tenant = 'acme') {
  const lease = await fair.runLease(mode, tenant, id);
  if (!lease) throw new Error('no run lease on one server');
  const begun = await lifecycle().beginAttempt(id, lease);
  return { lease, begun };
}

describe('a lone tenant lease and attempt start, counted', () => {
  it("a lone tenant's start runs 12 commands, the script call included, under its share, at it and on its last queued job alike: the pool's size and busy count are not read", async () => {
    await clean();
    const fair = share();
    await fair.start([mode]);
    // Loads the script, so the counted call below is the path's own (no NOSCRIPT retry).
    await newRun('warm');
    const warm = await leaseAndBegin(fair, 'warm');
    if (!warm.begun.run) throw new Error('no run');
    await lifecycle().finish(warm.begun.run, done);

    // Four runs queued, as the gateway counts them: a pick-up leaves a count, so no HDEL.
    for (let i = 0; i < 4; i++) await noteQueued(redis, on, mode, 'acme');
    await newRun('c1');
    let begun: Awaited<ReturnType<typeof leaseAndBegin>> | undefined;
    const first = await counted(async () => {
      begun = await leaseAndBegin(fair, 'c1');
    });
    expect(begun?.begun.attempt).toBe(1);
    expect(begun?.lease.answer?.ok).toBe(true);
    // Lease: TIME, leases and waiting ZRANGE, a sample of the queued counts (HRANDFIELD: nobody
    // else, so granted with no registrations HGETALL and no busy ZCARD) and this one's HINCRBY, two
    // ZADDs; start: record HGETALL, record HSET, XADD + PUBLISH (a first start writes no journal:
    // no HINCRBY + EXPIRE of its `#attempt`).
    const lone = {
      evalsha: 1,
      time: 1,
      hgetall: 1,
      zrange: 2,
      hincrby: 1,
      hrandfield: 1,
      zadd: 2,
      hset: 1,
      xadd: 1,
      publish: 1,
    };
    expect(first.by).toEqual(lone);
    expect(first.total).toBe(12);
    // A new lease key gets no expiry from the start (its heartbeat or its release see to it).
    expect(await redis.pttl(leases())).toBe(-1);

    // At its share (pool 4, share 2; c1 and c2 held) with nobody else waiting: the same commands.
    await newRun('c2');
    await leaseAndBegin(fair, 'c2');
    await newRun('c3');
    const third = await counted(() => leaseAndBegin(fair, 'c3'));
    expect(third.by).toEqual(lone);
    expect(await redis.zcard(leases())).toBe(3);

    // Its last queued job (a sequential client's every run): the sampled count's HDEL instead of
    // its HINCRBY, the same 12.
    await redis.hset(keys.poolQueued(mode), 'acme', 1);
    await newRun('c4');
    const last = await counted(() => leaseAndBegin(fair, 'c4'));
    const lastBy: Record<string, number> = { ...lone, hdel: 1 };
    delete lastBy.hincrby;
    expect(last.by).toEqual(lastBy);
    expect(await redis.exists(keys.poolQueued(mode))).toBe(0);
    await fair.close();
    await clean();
  });

  it("with another tenant's job queued the pool's size and busy count decide: under the share granted, at it deferred", async () => {
    await clean();
    const fair = share();
    await fair.start([mode]);
    await newRun('warm2');
    const warm = await leaseAndBegin(fair, 'warm2');
    if (!warm.begun.run) throw new Error('no run');
    await lifecycle().finish(warm.begun.run, done);
    await noteQueued(redis, on, mode, 'other');
    for (let i = 0; i < 3; i++) await noteQueued(redis, on, mode, 'acme');
    await newRun('d1');
    const under = await counted(() => leaseAndBegin(fair, 'd1'));
    // The lone path's commands, and the registrations HGETALL and busy ZCARD.
    expect(under.by.hgetall).toBe(2);
    expect(under.by.zcard).toBe(1);
    expect(under.by.hrandfield).toBe(1);
    expect(under.total).toBe(14);
    await newRun('d2');
    expect((await leaseAndBegin(fair, 'd2')).lease.answer?.ok).toBe(true);
    // At the share (2 of 4) with another tenant waiting: deferred, the share reported, no attempt.
    await newRun('d3');
    const refused = await leaseAndBegin(fair, 'd3');
    expect(refused.lease.answer).toEqual({ ok: false, limit: 2 });
    expect(refused.begun.deferred).toBe(true);
    expect(await redis.hget(keys.run('d3'), 'attempts')).toBe('0'); // no attempt spent
    expect(await redis.zrange(keys.poolTenantDeferred(mode, 'acme'), 0, -1)).toEqual(['d3']);
    await fair.close();
    await clean();
  });
});

describe('each skipped command where it would have mattered', () => {
  it("a sample of the queued counts that misses this tenant's takes its pick-up off all the same", async () => {
    await clean();
    const fair = share();
    await fair.start([mode]);
    // Three tenants queued: a sample of two fields holds this one's count or not (at random); the
    // count left is the same either way, over enough rounds to see both.
    const pool = [keys.poolQueued(mode), keys.poolBusy(mode), keys.poolWaiting(mode), leases()];
    for (let round = 0; round < 12; round++) {
      await redis.del(...pool, keys.poolTenantDeferred(mode, 'acme'));
      await redis.hset(keys.poolQueued(mode), 'other-1', 1, 'other-2', 1, 'acme', 2);
      expect((await fair.acquire(mode, 'acme', `s${round}-1`)).ok).toBe(true);
      expect(await redis.hget(keys.poolQueued(mode), 'acme')).toBe('1');
      expect((await fair.acquire(mode, 'acme', `s${round}-2`)).ok).toBe(true);
      expect(await redis.hexists(keys.poolQueued(mode), 'acme')).toBe(0);
      // At its share with others queued: deferred, and a count it no longer has stays absent.
      expect(await fair.acquire(mode, 'acme', `s${round}-3`)).toEqual({ ok: false, limit: 2 });
      expect(await redis.hgetall(keys.poolQueued(mode))).toEqual({ 'other-1': '1', 'other-2': '1' });
    }
    await fair.close();
    await clean();
  });

  it('a tenant listed past the first two waiting keeps its order: its new job gives the slot to its oldest deferred one', async () => {
    await clean();
    const promoted: string[] = [];
    const fair = share(async (_m, jobId) => {
      promoted.push(jobId);
      return true;
    });
    await fair.start([mode]);
    const waiting = keys.poolWaiting(mode);
    await redis.zadd(waiting, 1, 'first', 2, 'second', 3, 'third');
    await redis.zadd(keys.poolTenantDeferred(mode, 'third'), 1, 'old');
    await noteQueued(redis, on, mode, 'third');
    const answer = await fair.acquire(mode, 'third', 'new');
    expect(answer.ok).toBe(false);
    await until('old promoted', async () => promoted.length === 1);
    expect(promoted).toEqual(['old']);
    expect(await redis.zscore(leases('third'), 'old')).not.toBeNull();
    expect(await redis.zrange(keys.poolTenantDeferred(mode, 'third'), 0, -1)).toEqual(['new']);
    // Picked up from the queue: its count was taken off although it waits deferred now.
    expect(await redis.hget(keys.poolQueued(mode), 'third')).toBeNull();
    await fair.close();
    await clean();
  });

  it('another tenant with a deferred job and nothing queued holds a tenant at its share', async () => {
    await clean();
    const fair = share();
    await fair.start([mode]);
    for (const id of ['a1', 'a2']) expect((await fair.acquire(mode, 'acme', id)).ok).toBe(true);
    await redis.zadd(keys.poolWaiting(mode), 1, 'quiet');
    await redis.zadd(keys.poolTenantDeferred(mode, 'quiet'), 1, 'q1');
    expect(await redis.exists(keys.poolQueued(mode))).toBe(0);
    expect((await fair.acquire(mode, 'acme', 'a3')).ok).toBe(false);
    // The waiting list alone, with this tenant listed too: still the other one decides.
    await redis.zadd(keys.poolWaiting(mode), 0, 'acme');
    expect((await fair.acquire(mode, 'acme', 'a4')).ok).toBe(false);
    // Nobody else: past its share it is granted (work-conserving).
    await redis.zrem(keys.poolWaiting(mode), 'quiet');
    await redis.del(keys.poolTenantDeferred(mode, 'acme'));
    await redis.zrem(keys.poolWaiting(mode), 'acme');
    expect((await fair.acquire(mode, 'acme', 'a5')).ok).toBe(true);
    await fair.close();
    await clean();
  });

  it('a lease a SIGKILLed runner left in a key with no expiry is dropped when seen and never counted', async () => {
    await clean();
    // The dead runner took a lease and never renewed it: the key has no expiry, the lease lapsed.
    await redis.zadd(leases(), Date.now() - 10, 'dead-1');
    await redis.zadd(leases(), Date.now() - 10, 'dead-2');
    expect(await redis.pttl(leases())).toBe(-1);
    const fair = share();
    await fair.start([mode]);
    await noteQueued(redis, on, mode, 'other'); // contention: the share decides on live leases only
    const taken = await counted(() => fair.acquire(mode, 'acme', 'live-1'));
    expect(taken.by.zremrangebyscore).toBe(1);
    // The key held only lapsed leases: the new one sets its expiry again.
    expect(taken.by.pexpire).toBe(1);
    expect(await redis.zrange(leases(), 0, -1)).toEqual(['live-1']);
    expect(await redis.pttl(leases())).toBeGreaterThan(30_000);
    expect((await fair.acquire(mode, 'acme', 'live-2')).ok).toBe(true);
    expect((await fair.acquire(mode, 'acme', 'live-3')).ok).toBe(false);
    await fair.close();
    await clean();
  });

  it('a key whose other lease is live keeps its expiry without a PEXPIRE; a new key gets one from the heartbeat', async () => {
    await clean();
    const fair = share(async () => true, 900);
    await fair.start([mode]);
    const firstTake = await counted(() => fair.acquire(mode, 'acme', 'k1'));
    expect(firstTake.by.pexpire).toBeUndefined();
    // The heartbeat (a third of the lease) renews the held lease and sets the key's expiry.
    await until('the heartbeat to set an expiry', async () => (await redis.pttl(leases())) > 0);
    const second = await counted(() => fair.acquire(mode, 'acme', 'k2'));
    expect(second.by.pexpire).toBeUndefined();
    expect(await redis.pttl(leases())).toBeGreaterThan(0);
    // Well past the lease period both are still held: the heartbeat keeps the key and its leases.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await redis.zrange(leases(), 0, -1)).toEqual(['k1', 'k2']);
    await fair.close();
    await clean();
  });

  it("a first attempt's journal is not read back; a second attempt reads the first one's calls", async () => {
    await clean();
    const fair = share();
    await fair.start([mode]);
    await newRun('j1');
    const { begun } = await leaseAndBegin(fair, 'j1');
    expect(begun.attempt).toBe(1);
    expect(begun.entries).toEqual([]);
    const journal = createCallJournal({ redis, sealer });
    expect((await journal.claim('j1', 1, { index: 0, binding: 'app.echo', argsJson: '{}' })).kind).toBe(
      'new',
    );
    // The runner died: its lease lapses, the job is taken over and begins again.
    await fair.release(mode, 'acme', 'j1');
    const again = await counted(async () => {
      const second = await lifecycle().beginAttempt('j1', await fair.runLease(mode, 'acme', 'j1'));
      expect(second.attempt).toBe(2);
      expect(second.entries.map((e) => e.index)).toEqual([0]);
    });
    expect(again.by.hgetall).toBe(2); // record, journal (alone: no registrations read)
    await fair.close();
    await clean();
  });
});
