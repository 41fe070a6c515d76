/**
 * The API key lifecycle through the admin routes, on a real Redis with two gateway replicas
 * sharing it: list (never a secret), revoke (refused at once on both replicas, whose read caches
 * held the key, and its open event streams end), rotate with and without grace, expiry.
 */
import type { AddressInfo } from 'node:net';
import { keys } from '@islet/core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewaysUnderTest, startGateways } from '../test/gateway-harness.ts';

let replicas: GatewaysUnderTest | undefined;
let adminKey: string;

const auth = (k: string) => ({ authorization: `Bearer ${k}` });

let a: FastifyInstance;
let b: FastifyInstance;

beforeAll(async () => {
  replicas = await startGateways();
  const first = await replicas.add();
  a = first.app;
  b = (await replicas.add()).app;
  await first.deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  await first.deps.tenants.createTenant({ id: 'other', name: 'Other' });
  adminKey = (await first.deps.tenants.createKey('acme', ['platform.admin'])).key;
});

afterAll(() => replicas?.close());

async function createKey(body: Record<string, unknown>, tenant = 'acme') {
  const res = await a.inject({
    method: 'POST',
    url: `/v1/admin/tenants/${tenant}/keys`,
    headers: auth(adminKey),
    payload: body,
  });
  expect(res.statusCode).toBe(201);
  return res.json() as { key: string; keyId: string };
}

/** Whether `key` authenticates on `app` (a read route: 200 vs 401). */
async function works(app: FastifyInstance, key: string): Promise<boolean> {
  const res = await app.inject({ method: 'GET', url: '/v1/code-runs/nope', headers: auth(key) });
  if (res.statusCode === 401) return false;
  expect(res.statusCode).toBe(404);
  return true;
}

describe('listing keys', () => {
  it('shows id, prefix, scopes, principal, created, lastUsed and expiry, never a secret', async () => {
    const expiresAt = Date.now() + 3_600_000;
    const made = await createKey({ scopes: ['apps.use'], principal: 'ann', expiresAt });
    expect(await works(a, made.key)).toBe(true);
    const res = await a.inject({
      method: 'GET',
      url: '/v1/admin/tenants/acme/keys',
      headers: auth(adminKey),
    });
    expect(res.statusCode).toBe(200);
    const items = (res.json() as { items: Array<Record<string, unknown>> }).items;
    const listed = items.find((k) => k.id === made.keyId);
    expect(listed).toMatchObject({
      id: made.keyId,
      prefix: made.key.slice(0, 12),
      scopes: ['apps.use'],
      principal: 'ann',
      expiresAt,
    });
    expect(typeof listed?.created).toBe('number');
    expect(typeof listed?.lastUsed).toBe('number');
    // Neither the secret nor its hash leaves the store.
    expect(res.body).not.toContain(made.key);
    expect(res.body).not.toContain('hash');
  });

  it("lists only the tenant's own keys, and only for platform.admin", async () => {
    const theirs = await createKey({ scopes: ['apps.use'] }, 'other');
    const res = await a.inject({
      method: 'GET',
      url: '/v1/admin/tenants/acme/keys',
      headers: auth(adminKey),
    });
    expect(res.body).not.toContain(theirs.keyId);
    const plain = await createKey({ scopes: ['apps.use', 'sessions.admin'] });
    const refused = await a.inject({
      method: 'GET',
      url: '/v1/admin/tenants/acme/keys',
      headers: auth(plain.key),
    });
    expect(refused.statusCode).toBe(403);
    const missing = await a.inject({
      method: 'GET',
      url: '/v1/admin/tenants/nobody/keys',
      headers: auth(adminKey),
    });
    expect(missing.statusCode).toBe(404);
  });

  it('records a use at most once a minute per key and replica', async () => {
    const made = await createKey({ scopes: ['apps.use'] });
    const monitor = replicas!.gateways[0]!.deps.redis;
    {
      await works(a, made.key);
      const first = await monitor.hget(keys.tenantApiKeysUsed('acme'), made.keyId);
      expect(first).not.toBeNull();
      await monitor.hset(keys.tenantApiKeysUsed('acme'), made.keyId, '1');
      for (let i = 0; i < 5; i++) await works(a, made.key);
      // The replica wrote it already this minute: the marker stays.
      expect(await monitor.hget(keys.tenantApiKeysUsed('acme'), made.keyId)).toBe('1');
    }
  });
});

describe('revoking a key', () => {
  it('refuses it at once on every replica, although both had it cached', async () => {
    const made = await createKey({ scopes: ['apps.use'] });
    expect(await works(a, made.key)).toBe(true);
    expect(await works(b, made.key)).toBe(true);
    const res = await a.inject({
      method: 'DELETE',
      url: `/v1/admin/tenants/acme/keys/${made.keyId}`,
      headers: auth(adminKey),
    });
    expect(res.statusCode).toBe(204);
    expect(await works(a, made.key)).toBe(false);
    // The other replica's cache was dropped over pub/sub; wait for the message, not a clock.
    await expect.poll(() => works(b, made.key), { timeout: 2000, interval: 20 }).toBe(false);
    const listed = await a.inject({
      method: 'GET',
      url: '/v1/admin/tenants/acme/keys',
      headers: auth(adminKey),
    });
    expect(listed.body).not.toContain(made.keyId);
  });

  it('answers 404 for a key of another tenant or none, and 400 for a malformed id', async () => {
    const theirs = await createKey({ scopes: ['apps.use'] }, 'other');
    const cross = await a.inject({
      method: 'DELETE',
      url: `/v1/admin/tenants/acme/keys/${theirs.keyId}`,
      headers: auth(adminKey),
    });
    expect(cross.statusCode).toBe(404);
    expect(await works(a, theirs.key)).toBe(true);
    const bad = await a.inject({
      method: 'DELETE',
      url: '/v1/admin/tenants/acme/keys/..%2Fx',
      headers: auth(adminKey),
    });
    expect(bad.statusCode).toBe(400);
  });

  it("ends the key's open event streams on another replica with a key-revoked event", async () => {
    const made = await createKey({ scopes: ['apps.use', 'sessions.read'] });
    await b.listen({ port: 0, host: '127.0.0.1' });
    const { port } = b.server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/v1/sessions/s-watch/events`, {
      headers: auth(made.key),
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const decoder = new TextDecoder();
    while (!text.includes('event: ready')) text += decoder.decode((await reader.read()).value);
    const revoked = await a.inject({
      method: 'DELETE',
      url: `/v1/admin/tenants/acme/keys/${made.keyId}`,
      headers: auth(adminKey),
    });
    expect(revoked.statusCode).toBe(204);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text).toContain('event: key-revoked');
  });
});

describe('rotating a key', () => {
  it('gives a new secret for the same key; the old one works through its grace only', async () => {
    const made = await createKey({ scopes: ['apps.use'], principal: 'bob' });
    expect(await works(b, made.key)).toBe(true);
    const res = await a.inject({
      method: 'POST',
      url: `/v1/admin/tenants/acme/keys/${made.keyId}/rotate`,
      headers: auth(adminKey),
      payload: { graceSeconds: 600 },
    });
    expect(res.statusCode).toBe(201);
    const rotated = res.json() as {
      key: string;
      keyId: string;
      principal: string;
      previousExpiresAt: number;
    };
    expect(rotated.keyId).toBe(made.keyId);
    expect(rotated.principal).toBe('bob');
    expect(rotated.key).not.toBe(made.key);
    expect(rotated.previousExpiresAt).toBeGreaterThan(Date.now());
    expect(await works(a, rotated.key)).toBe(true);
    expect(await works(a, made.key)).toBe(true);
    expect(await works(b, made.key)).toBe(true);
    // A second rotation ends the first one's grace at once (one grace at a time), and without grace
    // the secret it replaces stops too.
    const again = await a.inject({
      method: 'POST',
      url: `/v1/admin/tenants/acme/keys/${made.keyId}/rotate`,
      headers: auth(adminKey),
      payload: { graceSeconds: 0 },
    });
    const third = again.json() as { key: string; previousExpiresAt?: number };
    expect(third.previousExpiresAt).toBeUndefined();
    expect(await works(a, made.key)).toBe(false);
    expect(await works(a, rotated.key)).toBe(false);
    await expect.poll(() => works(b, rotated.key), { timeout: 2000, interval: 20 }).toBe(false);
    expect(await works(b, third.key)).toBe(true);
    const listed = await a.inject({
      method: 'GET',
      url: '/v1/admin/tenants/acme/keys',
      headers: auth(adminKey),
    });
    const item = (listed.json() as { items: Array<{ id: string; prefix: string }> }).items.find(
      (k) => k.id === made.keyId,
    );
    expect(item?.prefix).toBe(third.key.slice(0, 12));
  });

  it('refuses a bad grace and an unknown key', async () => {
    const made = await createKey({ scopes: ['apps.use'] });
    for (const graceSeconds of [-1, 1.5, 'x', 10 ** 9]) {
      const res = await a.inject({
        method: 'POST',
        url: `/v1/admin/tenants/acme/keys/${made.keyId}/rotate`,
        headers: auth(adminKey),
        payload: { graceSeconds },
      });
      expect(res.statusCode).toBe(400);
    }
    const none = await a.inject({
      method: 'POST',
      url: '/v1/admin/tenants/acme/keys/key-000000000000/rotate',
      headers: auth(adminKey),
      payload: {},
    });
    expect(none.statusCode).toBe(404);
    expect(await works(a, made.key)).toBe(true);
  });
});

describe('expiry', () => {
  it('refuses a key once its expiresAt passed, cached or not', async () => {
    const made = await createKey({
      scopes: ['apps.use'],
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    expect(await works(a, made.key)).toBe(true);
    await expect.poll(() => works(a, made.key), { timeout: 5000, interval: 100 }).toBe(false);
  });

  it('refuses an expiresAt in the past or not a date', async () => {
    for (const expiresAt of [Date.now() - 1000, 'tomorrow', '2020-01-01T00:00:00Z']) {
      const res = await a.inject({
        method: 'POST',
        url: '/v1/admin/tenants/acme/keys',
        headers: auth(adminKey),
        payload: { scopes: ['apps.use'], expiresAt },
      });
      expect(res.statusCode).toBe(400);
    }
  });
});
