/** The console's routes without a browser: static files under CSP, the queue board's walls, /docs. */
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../../test/app-fixture.ts';
import { gatewayTestConfig, testLogger } from '../../test/gateway-harness.ts';
import { buildApp } from '../app.ts';
import { createGatewayDeps } from '../create-deps.ts';

let adminKey: string;
let adminKeyId: string;
let userKey: string;

const gateway = await onGatewayApp();
const { app, deps } = gateway;

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  const admin = await deps.tenants.createKey('acme', ['platform.admin']);
  adminKey = admin.key;
  adminKeyId = admin.keyId;
  userKey = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read', 'decisions'])).key;
});

const get = (url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers });

describe('/console', () => {
  it('serves the built page and assets under a strict CSP, nothing else', async () => {
    expect((await get('/console')).headers.location).toBe('/console/');
    for (const [url, type] of [
      ['/console/', 'text/html'],
      ['/console/app.js', 'text/javascript'],
      ['/console/app.css', 'text/css'],
    ] as const) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toContain(type);
      expect(res.headers['content-security-policy']).toMatch(
        /^default-src 'none'; script-src 'self'; style-src 'self'/,
      );
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
    const html = (await get('/console/')).body;
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|https?:\/\//);
    for (const bad of [
      '/console/../package.json',
      '/console/%2e%2e/src/app.ts',
      '/console/.built',
      '/console/nope.js',
    ])
      expect((await get(bad)).statusCode, bad).toBe(404);
  });
});

describe('/queues (bull-board)', () => {
  const cookieFor = async (key: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/console/board-session',
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: res.statusCode, cookie: String(res.headers['set-cookie'] ?? '') };
  };

  it('is closed without an admin key or its cookie, as problem+json', async () => {
    const refused: Array<Record<string, string>> = [
      {},
      { authorization: `Bearer ${userKey}` },
      { cookie: 'islet_board=abc.9999999999999.forged' },
    ];
    for (const headers of refused) {
      const res = await get('/queues/api/queues', headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
    expect((await cookieFor(userKey)).status).toBe(403);
  });

  it('opens with the cookie an admin key gets, shows every mode queue, and closes when the key goes', async () => {
    const { status, cookie } = await cookieFor(adminKey);
    expect(status).toBe(204);
    expect(cookie).toMatch(
      /^islet_board=[^;]+; Path=\/queues; HttpOnly; SameSite=Strict; Max-Age=900; Secure$/,
    );
    const value = cookie.split(';')[0]!;
    const res = await get('/queues/api/queues', { cookie: value });
    expect(res.statusCode).toBe(200);
    const names = (res.json().queues as Array<{ name: string }>).map((q) => q.name).sort();
    expect(names).toEqual(['{runs-danger-full-access}', '{runs-read-only}', '{runs-workspace-write}']);
    const page = await get('/queues/', { cookie: value });
    expect(page.statusCode).toBe(200);
    // Never framed, nothing from elsewhere: on the page, its API and its refusals alike.
    for (const answer of [page, res, await get('/queues/api/queues')]) {
      expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(answer.headers['content-security-policy']).toMatch(/^default-src 'none'; script-src 'self';/);
      expect(answer.headers['x-frame-options']).toBe('DENY');
    }
    // A cookie whose expiry was pushed out by hand fails its HMAC.
    const [hash, , sig] = value.slice('islet_board='.length).split('.');
    expect(
      (await get('/queues/api/queues', { cookie: `islet_board=${hash}.99999999999999.${sig}` })).statusCode,
    ).toBe(401);
    // Revoked through the store: every gateway drops the key from its read cache on the broadcast.
    expect(await deps.tenants.revokeKey('acme', adminKeyId)).not.toBeNull();
    let after = 200;
    for (let i = 0; i < 50 && after !== 401; i++) {
      after = (await get('/queues/api/queues', { cookie: value })).statusCode;
      if (after !== 401) await new Promise((r) => setTimeout(r, 20));
    }
    expect(after).toBe(401);
  });
});

describe('/queues cookie on a plain-http development stack', () => {
  it('is not Secure only when ISLET_DEV_PLAIN_HTTP says so', async () => {
    const config = gatewayTestConfig(gateway.server.url, { ISLET_DEV_PLAIN_HTTP: 'true' });
    const devDeps = await createGatewayDeps(config, testLogger());
    const dev = await buildApp(devDeps);
    const admin = (await devDeps.tenants.createKey('acme', ['platform.admin'])).key;
    try {
      const res = await dev.inject({
        method: 'POST',
        url: '/console/board-session',
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(res.statusCode).toBe(204);
      expect(String(res.headers['set-cookie'])).not.toContain('Secure');
    } finally {
      await dev.close();
      await devDeps.close();
    }
  });
});
