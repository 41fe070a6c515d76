/**
 * `islet admin` straight on a Redis Cluster: the CLI reads the same Redis variables as the services
 * (ISLET_REDIS_MODE, comma-separated seeds, the password from its _FILE) and refuses a bad
 * configuration with the message the services give.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis, createTenantStore } from '@islet/core';
import { type RedisCluster, startRedisCluster } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from './cli.ts';

let cluster: RedisCluster;
let dir: string;
beforeAll(async () => {
  cluster = await startRedisCluster({ password: 'cli-pass' });
  dir = mkdtempSync(join(tmpdir(), 'islet-cli-cluster-'));
  writeFileSync(join(dir, 'pw'), 'cli-pass\n');
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('islet admin on Redis Cluster', () => {
  it('creates a tenant and a key through the Cluster client (password from a file)', async () => {
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
      writes.push(String(s));
      return true;
    });
    const env = {
      ISLET_REDIS_MODE: 'cluster',
      ISLET_REDIS_URL: cluster.seeds,
      ISLET_REDIS_PASSWORD_FILE: join(dir, 'pw'),
    };
    try {
      expect(await runCli(['admin', 'create-tenant', '--name', 'Acme', '--id', 'acme'], env)).toBe(0);
      expect(await runCli(['admin', 'create-key', '--tenant', 'acme', '--scopes', 'apps.use'], env)).toBe(0);
      await expect(
        runCli(['admin', 'create-tenant', '--name', 'X'], { ...env, ISLET_REDIS_URL: 'h1:1,h2' }),
      ).rejects.toThrow('ISLET_REDIS_URL seed "h2": not host:port, redis://host:port or rediss://host:port');
    } finally {
      spy.mockRestore();
    }
    const key = JSON.parse(writes[1]!).key as string;
    const redis = createRedis({
      ISLET_REDIS_MODE: 'cluster',
      ISLET_REDIS_URL: cluster.seeds,
      ISLET_REDIS_PASSWORD: 'cli-pass',
    });
    try {
      expect(await createTenantStore(redis).resolveKey(key)).toMatchObject({
        tenantId: 'acme',
        scopes: ['apps.use'],
      });
    } finally {
      redis.disconnect();
    }
  });
});
