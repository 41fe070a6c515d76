/**
 * The fair-share scripts against a real redis-server: several runners racing for one tenant's
 * slots get exactly its share, the share follows the pool's live slots, a lease that is not
 * renewed (a SIGKILLed runner) lapses, and a release promotes the tenant's oldest deferred job.
 */
import { createLogger, createRedis, keys } from '@islet/core';
import { type RedisServer, startRedis } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
) {
  const share = createFairShare({
    redis,
    logger,
    promote,
    config: {
      ISLET_RUNNER_CONCURRENCY: 4,
      ISLET_RUNNER_NAME: undefined,
      ISLET_TENANT_POOL_SHARE: 0.5,
      ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0,
      ISLET_TENANT_SHARE_LEASE_MS: 30_000,
      ...config,
    },
  });
  started.push(share);
  return share;
}

describe('fair share', () => {
  it('three runners racing for one tenant grant exactly its share of the live pool', async () => {
    const runners = [runner(), runner(), runner()];
    for (const r of runners) await r.start(['read-only']);
    // Pool = 3 × 4 slots; share 0.5 → 6 for one tenant.
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => runners[i % 3]!.acquire('read-only', 'acme', `job-${i}`)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(6);
    expect(results[0]!.limit).toBe(6);
    expect(await redis.zcard(keys.poolTenantDeferred('read-only', 'acme'))).toBe(24);
    // Another tenant is not affected.
    expect((await runners[0]!.acquire('read-only', 'globex', 'g-1')).ok).toBe(true);
    // A job that holds a lease gets it again (a stalled job taken over keeps its slot).
    const holder = results.findIndex((r) => r.ok);
    expect((await runners[1]!.acquire('read-only', 'acme', `job-${holder}`)).ok).toBe(true);
    for (const r of runners) await r.close();
    await redis.del(keys.poolTenantLeases('read-only', 'acme'), keys.poolTenantDeferred('read-only', 'acme'));
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
    // A cap turns it on again: the fifth job of a tenant capped at 4 is deferred.
    const capped = runner({ ISLET_TENANT_POOL_SHARE: 1, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 4 });
    await capped.start(['read-only']);
    const grants = [];
    for (let i = 0; i < 5; i++) grants.push((await capped.acquire('read-only', 'capped', `c-${i}`)).ok);
    expect(grants).toEqual([true, true, true, true, false]);
    await share.close();
    await capped.close();
  });

  it('the absolute cap applies on top of the share, and a tenant always gets at least one slot', async () => {
    const capped = runner({ ISLET_TENANT_MAX_EXECUTING_PER_POOL: 1 });
    await capped.start(['workspace-write']);
    expect((await capped.acquire('workspace-write', 't1', 'a')).limit).toBe(1);
    expect((await capped.acquire('workspace-write', 't1', 'b')).ok).toBe(false);
    await capped.close();
    const tiny = runner({ ISLET_RUNNER_CONCURRENCY: 1, ISLET_TENANT_POOL_SHARE: 0.5 });
    await tiny.start(['danger-full-access']);
    expect(await tiny.acquire('danger-full-access', 't1', 'a')).toEqual({ ok: true, limit: 1 });
    await tiny.close();
  });

  it("a lease nobody renews (a SIGKILLed runner) lapses, and a dead runner's slots leave the pool", async () => {
    const dead = runner({ ISLET_TENANT_SHARE_LEASE_MS: 1000 });
    const live = runner({ ISLET_TENANT_SHARE_LEASE_MS: 1000 });
    await dead.start(['read-only']);
    await live.start(['read-only']);
    // Pool 8, share 4: the dead runner holds all four of tenant z's slots.
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
  });

  it('the heartbeat keeps a held lease alive past its period', async () => {
    const r = runner({ ISLET_TENANT_SHARE_LEASE_MS: 1000 });
    await r.start(['read-only']);
    expect((await r.acquire('read-only', 'hb', 'x')).ok).toBe(true);
    await new Promise((res) => setTimeout(res, 1800));
    expect(await redis.zscore(keys.poolTenantLeases('read-only', 'hb'), 'x')).not.toBeNull();
    await r.release('read-only', 'hb', 'x');
    expect(await redis.zcard(keys.poolTenantLeases('read-only', 'hb'))).toBe(0);
    await r.close();
  });

  it("a release promotes the tenant's oldest deferred job, skipping ones that are gone", async () => {
    const promoted: string[] = [];
    const r = runner({ ISLET_RUNNER_CONCURRENCY: 2 }, async (_mode, id) => {
      promoted.push(id);
      return id !== 'second'; // 'second' was cancelled meanwhile
    });
    await r.start(['workspace-write']);
    expect((await r.acquire('workspace-write', 'p', 'first-running')).ok).toBe(true);
    for (const id of ['second', 'third', 'fourth']) {
      expect((await r.acquire('workspace-write', 'p', id)).ok).toBe(false);
      await new Promise((res) => setTimeout(res, 2));
    }
    await r.release('workspace-write', 'p', 'first-running');
    expect(promoted).toEqual(['second', 'third']);
    expect(await redis.zrange(keys.poolTenantDeferred('workspace-write', 'p'), 0, -1)).toEqual(['fourth']);
    await r.close();
  });
});
