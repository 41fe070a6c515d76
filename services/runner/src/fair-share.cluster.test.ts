/**
 * The fair-share scripts on Redis Cluster: a pool's slot registry and a tenant's leases and
 * deferred jobs share the pool's hash tag, so each script runs in one slot — proven through a
 * Cluster client on a real six-node cluster and through a plain client on a slot-checking node
 * (cross-slot scripts fail there with CROSSSLOT).
 */
import { createLogger, createRedis, keys, type Redis } from '@islet/core';
import {
  type RedisCluster,
  type SlotCheckingRedis,
  startRedisCluster,
  startSlotCheckingRedis,
} from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFairShare } from './fair-share.ts';

const logger = createLogger({ name: 'fair-share-cluster-test', level: 'silent' });
let seq = 0;

async function exerciseFairShare(redis: Redis): Promise<void> {
  const tenant = `acme-${seq++}`;
  const promoted: string[] = [];
  const runners = [0, 1].map(() =>
    createFairShare({
      redis,
      logger,
      promote: async (_mode, jobId) => {
        promoted.push(jobId);
        return true;
      },
      config: {
        ISLET_RUNNER_CONCURRENCY: 4,
        ISLET_RUNNER_NAME: undefined,
        ISLET_TENANT_POOL_SHARE: 0.5,
        ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0,
        ISLET_TENANT_SHARE_LEASE_MS: 30_000,
      },
    }),
  );
  try {
    for (const r of runners) await r.start(['read-only']);
    // Pool = 2 × 4 slots; share 0.5 → 4 for one tenant, whichever runner asks.
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => runners[i % 2]!.acquire('read-only', tenant, `job-${i}`)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(4);
    expect(await redis.zcard(keys.poolTenantDeferred('read-only', tenant))).toBe(6);
    const holder = results.findIndex((r) => r.ok);
    await runners[0]!.release('read-only', tenant, `job-${holder}`);
    expect(promoted).toHaveLength(1);
    expect(await redis.zcard(keys.poolTenantDeferred('read-only', tenant))).toBe(5);
  } finally {
    for (const r of runners) await r.close();
    await redis.del(keys.poolTenantLeases('read-only', tenant), keys.poolTenantDeferred('read-only', tenant));
  }
}

describe('fair share on a slot-checking node', () => {
  let node: SlotCheckingRedis;
  let redis: Redis;
  beforeAll(async () => {
    node = await startSlotCheckingRedis();
    redis = createRedis(node.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await node?.stop();
  });

  it('register, acquire, release and promote: each script in one slot', async () => {
    await exerciseFairShare(redis);
  });
});

describe('fair share on a real Redis Cluster', () => {
  let cluster: RedisCluster;
  let redis: Redis;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    redis = createRedis({ ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: cluster.seeds });
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('two runners share one tenant share exactly through the Cluster client', async () => {
    await exerciseFairShare(redis);
  });
});
