/**
 * Seal-key rotation end to end, as charts/islet/README.md documents it: the new key goes in first
 * (listed and made active, the old key kept), the processes restart, old records stay readable and
 * new ones are sealed with the new key. Dropping the old key too early makes old records unreadable
 * (which is why the procedure keeps it).
 */
import { createTenantStore, generateSealKey, SCOPES } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from './helpers.ts';

let redis: RedisServer;
const clusters: Cluster[] = [];
const OLD = generateSealKey('rot1');
const NEW = generateSealKey('rot2');
let key = ''; // one key with a fixed principal across the restarts: runs belong to their principal

const run = (code: string, callId: string) => ({
  code,
  description: 'Rotation probe',
  sessionId: 'sess-rot',
  turnId: 'turn-1',
  callId,
});

async function stack(keys: string, active: string): Promise<Cluster> {
  const c = await startCluster({
    redisUrl: redis.url,
    gateways: 1,
    runners: [{ modes: ['read-only'] }],
    env: { ISLET_SEAL_KEYS: keys, ISLET_SEAL_ACTIVE_KEY_ID: active },
  });
  clusters.push(c);
  return c;
}

/** Every stored value that carries a sealed blob, by key id. */
async function sealedBy(kid: string): Promise<number> {
  const r = new Redis(redis.url);
  try {
    let n = 0;
    for (const key of await r.keys('*')) {
      const type = await r.type(key);
      const values = type === 'string' ? [await r.get(key)] : type === 'hash' ? await r.hvals(key) : [];
      n += values.filter((v) => v?.includes(`v1.${kid}.`)).length;
    }
    return n;
  } finally {
    r.disconnect();
  }
}

beforeAll(async () => {
  redis = await startRedis({ appendFsync: 'always' });
});
afterAll(async () => {
  for (const c of clusters) await c.stop();
  await redis?.stop();
});

describe('seal-key rotation (new key first, old records still readable)', () => {
  it('rotates without losing a record, and shows why the old key must stay listed', async () => {
    const before = await stack(OLD, 'rot1');
    const r = new Redis(redis.url);
    key = (await createTenantStore(r).createKey(before.tenantId, [...SCOPES], { principal: 'rotation-test' }))
      .key;
    r.disconnect();
    const a = api(before.url, key);
    const old = await a('POST', '/v1/runs', run('return "sealed with rot1"', 'c1'), { prefer: 'wait=30' });
    expect(old.status).toBe(200);
    expect(old.body.result).toMatchObject({ _tag: 'Completed', value: 'sealed with rot1' });
    expect(await sealedBy('rot1')).toBeGreaterThan(0);
    await before.stop();

    // Step 1 of the procedure: both keys listed, the new one active; the processes restart.
    const after = await stack(`${NEW},${OLD}`, 'rot2');
    const b = api(after.url, key);
    const reread = await b('GET', `/v1/code-runs/${old.body.id}`);
    expect(reread.status).toBe(200);
    expect(reread.body.result).toEqual(old.body.result);
    const fresh = await b('POST', '/v1/runs', run('return "sealed with rot2"', 'c2'), { prefer: 'wait=30' });
    expect(fresh.status).toBe(200);
    expect(await sealedBy('rot2')).toBeGreaterThan(0);
    await after.stop();

    // Dropping the old key while records sealed with it exist: those records no longer open.
    const tooEarly = await stack(NEW, 'rot2');
    const c = api(tooEarly.url, key);
    expect((await c('GET', `/v1/code-runs/${fresh.body.id}`)).status).toBe(200);
    expect((await c('GET', `/v1/code-runs/${old.body.id}`)).status).not.toBe(200);
  }, 120_000);
});
