/**
 * The fair-share scripts on Redis Cluster: a pool's slot registry, its indexes and its tenants'
 * leases and deferred jobs share the pool's hash tag, so each script runs in one slot (a release
 * handing the slot to another tenant's deferred job included) — proven through a
 * Cluster client on a real six-node cluster and through a plain client on a slot-checking node
 * (cross-slot scripts fail there with CROSSSLOT).
 */
import { createLogger, keys, type Redis } from '@islet/core';
import { noteQueued } from '@islet/runs';
import { describe, expect, it } from 'vitest';
import { describeRedis } from '../test/describe-redis.ts';
import { shareConfig } from '../test/share-config.ts';
import { createFairShare } from './fair-share.ts';

const on = { ISLET_TENANT_POOL_SHARE: 0.5, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0 };

const logger = createLogger({ name: 'fair-share-cluster-test', level: 'silent' });
let seq = 0;

async function exerciseFairShare(redis: Redis): Promise<void> {
  const tenant = `acme-${seq}`;
  const other = `globex-${seq++}`;
  const promoted: string[] = [];
  const runners = [0, 1].map(() =>
    createFairShare({
      redis,
      logger,
      promote: async (_mode, jobId) => {
        promoted.push(jobId);
        return true;
      },
      config: shareConfig(),
    }),
  );
  try {
    for (const r of runners) await r.start(['read-only']);
    // The pool's keys and a run's are in different slots here: a run's lease keeps scripts of its
    // own instead of riding in the attempt's start and end.
    expect(await runners[0]!.runLease('read-only', tenant, 'job-0')).toBeUndefined();
    await noteQueued(redis, on, 'read-only', tenant);
    // Pool = 2 × 4 slots; a lone tenant gets all 8, whichever runner asks.
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => runners[i % 2]!.acquire('read-only', tenant, `job-${i}`)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(8);
    // Another tenant's job queued: the full pool holds the first tenant's next jobs back, and the
    // other's job, met in the full pool, waits; the next freed slot is its (under its share).
    await noteQueued(redis, on, 'read-only', other);
    for (const id of ['job-8', 'job-9'])
      expect((await runners[1]!.acquire('read-only', tenant, id)).ok).toBe(false);
    expect(await redis.zcard(keys.poolTenantDeferred('read-only', tenant))).toBe(2);
    expect((await runners[1]!.acquire('read-only', other, 'other-0')).ok).toBe(false);
    const holder = results.findIndex((r) => r.ok);
    await runners[0]!.release('read-only', tenant, `job-${holder}`);
    expect(promoted).toEqual(['other-0']);
    expect((await runners[0]!.acquire('read-only', other, 'other-0')).ok).toBe(true);
    expect(await redis.zcard(keys.poolTenantDeferred('read-only', tenant))).toBe(2);
  } finally {
    for (const r of runners) await r.close();
    await redis.del(
      keys.poolTenantLeases('read-only', tenant),
      keys.poolTenantDeferred('read-only', tenant),
      keys.poolTenantLeases('read-only', other),
      keys.poolTenantDeferred('read-only', other),
      keys.poolBusy('read-only'),
      keys.poolQueued('read-only'),
      keys.poolWaiting('read-only'),
    );
  }
}

describe('fair share on a slot-checking node', () => {
  const redis = describeRedis('slot-checking');

  it('register, acquire, release and promote: each script in one slot', async () => {
    await exerciseFairShare(redis());
  });
});

describe('fair share on a real Redis Cluster', () => {
  const redis = describeRedis('cluster');

  it('two runners grant exactly the pool and hand a freed slot to another tenant through the Cluster client', async () => {
    await exerciseFairShare(redis());
  });
});
