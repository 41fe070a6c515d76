import { createLogger, createRedis, generateSealKey, loadConfig } from '@islet/core';
import { type RedisServer, startRedis } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayDeps } from './create-deps.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

describe('gateway start: Redis durability check (ISLET_REDIS_DURABILITY_CHECK)', () => {
  let volatile: RedisServer;
  let durable: RedisServer;
  beforeAll(async () => {
    volatile = await startRedis({ appendOnly: false });
    durable = await startRedis();
  });
  afterAll(async () => {
    await volatile?.stop();
    await durable?.stop();
  });

  it('refuse: a Redis without AOF or with an evicting policy stops the gateway, naming both', async () => {
    const admin = createRedis(volatile.url);
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    admin.disconnect();
    const config = loadConfig({
      ...base,
      ISLET_REDIS_URL: volatile.url,
      ISLET_REDIS_DURABILITY_CHECK: 'refuse',
    });
    await expect(createGatewayDeps(config, createLogger({ name: 't', level: 'silent' }))).rejects.toThrow(
      'Redis can lose queued runs: appendonly is no, not yes; maxmemory-policy is allkeys-lru, not noeviction (ISLET_REDIS_DURABILITY_CHECK=refuse)',
    );
  });

  it('warn (default) starts on the same Redis; refuse starts on a durable one', async () => {
    const warned = await createGatewayDeps(
      loadConfig({ ...base, ISLET_REDIS_URL: volatile.url }),
      createLogger({ name: 't', level: 'silent' }),
    );
    await warned.close();
    const ok = await createGatewayDeps(
      loadConfig({ ...base, ISLET_REDIS_URL: durable.url, ISLET_REDIS_DURABILITY_CHECK: 'refuse' }),
      createLogger({ name: 't', level: 'silent' }),
    );
    await ok.close();
  });
});
