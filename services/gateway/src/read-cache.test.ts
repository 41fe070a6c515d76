/**
 * The per-replica read caches (read-cache.ts) and the failed-auth block announcements: two
 * gateway replicas on one real Redis, each with its own caches. A change made through one replica
 * is seen by the other at once; an address refused on one is refused on the other, with a valid
 * key too; a cache whose subscriber is down reads Redis every time.
 */
import { createRedis } from '@islet/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GatewayReplica, type GatewaysUnderTest, startGateways } from '../test/gateway-harness.ts';
import { createCacheHub } from './read-cache.ts';

let fleet: GatewaysUnderTest | undefined;
let replicas: GatewayReplica[] = [];
let key: string;

beforeAll(async () => {
  fleet = await startGateways({
    env: { ISLET_INTERNAL_TOKEN: 'internal-token-for-cache-tests', ISLET_AUTH_FAILURES_PER_MINUTE: '3' },
  });
  for (let i = 0; i < 2; i++) await fleet.add();
  replicas = fleet.gateways;
  await replicas[0]!.deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await replicas[0]!.deps.tenants.createKey('acme', ['apps.use', 'decisions'])).key;
});

afterAll(() => fleet?.close());

const eventually = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 100; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
};

describe('read caches across replicas', () => {
  it('a connection changed or removed through one replica is not served from the other’s cache', async () => {
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const made = await a.deps.connections.create('acme', {
      name: 'Notes',
      kind: 'http',
      url: 'http://127.0.0.1:9/',
      tools: [{ name: 'read', inputSchema: {}, policy: 'allow' }],
      resources: [],
      prompts: [],
    });
    if (!made.ok) throw new Error('connection');
    const id = made.connection.id;
    // B caches it (two reads, the second from memory).
    expect((await b.deps.connections.get('acme', id))?.tools[0]?.policy).toBe('allow');
    expect((await b.deps.connections.get('acme', id))?.tools[0]?.policy).toBe('allow');
    await a.deps.connections.replace('acme', {
      ...made.connection,
      tools: [{ name: 'read', inputSchema: {}, policy: 'deny' }],
    });
    expect(
      await eventually(async () => (await b.deps.connections.get('acme', id))?.tools[0]?.policy === 'deny'),
    ).toBe(true);
    await a.deps.connections.remove('acme', id);
    expect(await eventually(async () => (await b.deps.connections.get('acme', id)) === null)).toBe(true);
  });

  it('a tenant’s connection list is read once per replica and dropped on both by a create, a change or a removal on either', async () => {
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const probe = createRedis(fleet!.server.url);
    const hvals = async () =>
      Number(/cmdstat_hvals:calls=(\d+)/.exec(await probe.info('commandstats'))?.[1] ?? 0);
    const ids = async (r: (typeof replicas)[0]) => (await r.deps.connections.list('lists')).map((c) => c.id);
    const input = (name: string) => ({
      name,
      kind: 'http' as const,
      url: 'http://127.0.0.1:9/',
      tools: [{ name: 'read', inputSchema: {}, policy: 'allow' as const }],
      resources: [],
      prompts: [],
    });
    try {
      expect(await ids(b)).toEqual([]);
      const before = await hvals();
      expect(await ids(b)).toEqual([]);
      expect(await ids(b)).toEqual([]);
      expect(await hvals()).toBe(before); // an empty list is cached too: a create drops it
      const made = await a.deps.connections.create('lists', input('One'));
      if (!made.ok) throw new Error('connection');
      const one = made.connection.id;
      expect(await eventually(async () => (await ids(b)).join() === one)).toBe(true);
      // A caller changing its copy changes nobody else's.
      (await b.deps.connections.list('lists')).pop();
      expect(await ids(b)).toEqual([one]);
      // A name is checked against the stored list, not a cached one.
      expect(await b.deps.connections.create('lists', input('One'))).toMatchObject({
        ok: false,
        code: 'conflict',
      });
      await a.deps.connections.replace('lists', { ...made.connection, url: 'http://127.0.0.1:10/' });
      expect(
        await eventually(
          async () => (await b.deps.connections.list('lists'))[0]?.url === 'http://127.0.0.1:10/',
        ),
      ).toBe(true);
      await b.deps.connections.remove('lists', one);
      expect(await eventually(async () => (await ids(a)).length === 0)).toBe(true);
    } finally {
      probe.disconnect();
    }
  });

  it('a run policy set through one replica applies to the next run accepted by the other', async () => {
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    expect((await b.deps.runPolicies!.effective('acme')).style).toBe('run_code');
    await a.deps.runPolicies!.set('acme', { style: 'code-mode' });
    expect(
      await eventually(async () => (await b.deps.runPolicies!.effective('acme')).style === 'code-mode'),
    ).toBe(true);
    await a.deps.runPolicies!.set('acme', { style: 'run_code' });
  });

  it('an address over the failed-auth limit on one replica is refused by the other, (its unknown keys; a valid key is never refused for its address)', async () => {
    if (Date.now() % 60_000 > 50_000)
      await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const from = (r: (typeof replicas)[0], remoteAddress: string, authorization: string) =>
      r.app.inject({ method: 'GET', url: '/v1/decisions', remoteAddress, headers: { authorization } });
    // B has seen the address succeed (it would no longer read the counter for it this minute).
    expect((await from(b, '203.0.113.9', `Bearer ${key}`)).statusCode).toBe(200);
    for (let i = 0; i < 3; i++)
      expect((await from(a, '203.0.113.9', `Bearer wrong-${i}`)).statusCode).toBe(401);
    expect((await from(a, '203.0.113.9', 'Bearer wrong-probe')).statusCode).toBe(429);
    expect(
      await eventually(async () => (await from(b, '203.0.113.9', 'Bearer wrong-probe')).statusCode === 429),
    ).toBe(true);
    expect((await from(b, '203.0.113.9', `Bearer ${key}`)).statusCode).toBe(200);
    // Failures split across replicas add up (the counter is shared); the block made on A reaches
    // B by its announcement (one pub/sub hop; in this test both replicas share one event loop).
    for (const r of [a, b, a]) expect((await from(r, '203.0.113.10', 'Bearer nope')).statusCode).toBe(401);
    expect(
      await eventually(async () => (await from(b, '203.0.113.10', 'Bearer nope-again')).statusCode === 429),
    ).toBe(true);
    expect((await from(a, '203.0.113.10', 'Bearer nope-again')).statusCode).toBe(429);
    expect((await from(a, '203.0.113.10', `Bearer ${key}`)).statusCode).toBe(200);
    expect((await from(b, '203.0.113.11', `Bearer ${key}`)).statusCode).toBe(200);
  });

  it('holds at most maxEntries, forgetting the oldest without walking its entries, and drops a key everywhere', async () => {
    const subscriber = createRedis(fleet!.server.url);
    const publisher = createRedis(fleet!.server.url);
    const hub = createCacheHub(subscriber, publisher, { maxEntries: 100 });
    const reads = new Map<string, number>();
    const cache = hub.cache('bounded', async (k) => {
      reads.set(k, (reads.get(k) ?? 0) + 1);
      return k;
    });
    try {
      expect(await eventually(async () => hub.listening())).toBe(true);
      // Past the bound, forgetting one entry at a time walked the holes at the Map's front on
      // every insert (round 29 gw-cpu): no iteration now.
      const keys = vi.spyOn(Map.prototype, 'keys');
      try {
        for (let i = 0; i < 1000; i++) await cache.get(`k${i}`);
        expect(keys).not.toHaveBeenCalled();
      } finally {
        keys.mockRestore();
      }
      // The last 50 (half the bound) at least are held; the first is read again.
      for (let i = 950; i < 1000; i++) await cache.get(`k${i}`);
      expect([...reads.values()].every((n) => n === 1)).toBe(true);
      await cache.get('k0');
      expect(reads.get('k0')).toBe(2);
      // An invalidated key is read again, wherever it was held.
      await cache.invalidate('k999');
      await cache.get('k999');
      expect(reads.get('k999')).toBe(2);
    } finally {
      hub.close();
      subscriber.disconnect();
      publisher.disconnect();
    }
  });

  it('caches nothing while its subscriber is down, and drops everything when it comes back', async () => {
    const subscriber = createRedis(fleet!.server.url);
    const publisher = createRedis(fleet!.server.url);
    const hub = createCacheHub(subscriber, publisher);
    let reads = 0;
    const cache = hub.cache('thing', async (k) => {
      reads++;
      return `${k}-${reads}`;
    });
    try {
      expect(await eventually(async () => hub.listening())).toBe(true);
      expect(await cache.get('x')).toBe('x-1');
      expect(await cache.get('x')).toBe('x-1');
      subscriber.disconnect(true);
      expect(await eventually(async () => !hub.listening())).toBe(true);
      expect(await cache.get('x')).toBe('x-2');
      expect(await cache.get('x')).toBe('x-3');
      expect(await eventually(async () => hub.listening())).toBe(true);
      expect(await cache.get('x')).toBe('x-4');
      expect(await cache.get('x')).toBe('x-4');
      // Misses are not cached: a value created elsewhere is seen at once.
      const empty = hub.cache('empty', async () => null);
      expect(await empty.get('y')).toBeNull();
    } finally {
      hub.close();
      subscriber.disconnect();
      publisher.disconnect();
    }
  });
});
