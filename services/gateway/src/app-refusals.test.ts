/**
 * The gateway app through inject on real Redis: run_code's refusals, quoted from the contract, and
 * problem+json 4xx (never a 5xx) on garbage input, unknown routes and keys, missing scopes. The shared
 * set-up is test/app-fixture.ts.
 */
import { describe, expect, it } from 'vitest';
import { auth, expectProblem, onAppFixture, run } from '../test/app-fixture.ts';

const { app, key, otherKey, adminKey } = await onAppFixture();

describe('run_code refusals, quoted from the contract', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ description: '' }, 'invalid description: expected a non-empty string'],
    [{ description: undefined }, 'invalid description: expected a non-empty string'],
    [{ timeoutMs: 0 }, 'invalid timeoutMs: expected a positive finite number'],
    [{ timeoutMs: -5 }, 'invalid timeoutMs: expected a positive finite number'],
    [{ timeoutMs: '100' }, 'invalid timeoutMs: expected a positive finite number'],
    [
      { sandbox_permissions: 'workspace-write' },
      'invalid escalation: sandbox_permissions requires a justification',
    ],
    [
      { justification: 'Because.' },
      'invalid escalation: justification is only valid together with sandbox_permissions',
    ],
    [
      { sandbox_permissions: 'workspace-write', justification: '  ' },
      'invalid justification: expected a non-empty sentence',
    ],
  ];
  for (const [extra, refusal] of cases) {
    it(refusal, async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: auth(key),
        payload: run(extra),
      });
      const p = expectProblem(res, 400, 'validation');
      expect(p.detail).toBe(refusal);
    });
  }
  it('refuses a malformed sessionId (session, turn and call are optional, generated when absent)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(key),
      payload: run({ sessionId: '' }),
    });
    expect(expectProblem(res, 400, 'validation').detail).toContain('sessionId');
  });
  it('refuses unknown connections without telling whose they are', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(key),
      payload: run({ connections: ['conn-nope'] }),
    });
    expect(expectProblem(res, 400, 'validation').detail).toBe('unknown connection: conn-nope');
  });
});

describe('garbage input never yields a 5xx', () => {
  it('malformed JSON → 400 malformed-json', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), 'content-type': 'application/json' },
      payload: '{"code":',
    });
    expectProblem(res, 400, 'malformed-json');
  });
  it('wrong content type → 415', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expectProblem(res, 415, 'unsupported-media-type');
    const xml = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: { ...auth(key), 'content-type': 'application/xml' },
      payload: '<a/>',
    });
    expectProblem(xml, 415, 'unsupported-media-type');
  });
  it('huge body → 413', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(key),
      payload: run({ code: 'x'.repeat(100_000) }),
    });
    expectProblem(res, 413, 'payload-too-large');
  });
  it('non-object JSON bodies, empty bodies and odd params → 4xx', async () => {
    for (const payload of ['[]', '"x"', '42', 'null']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: { ...auth(key), 'content-type': 'application/json' },
        payload,
      });
      // A client error (4xx): never a 500 for input.
      expect(Math.floor(res.statusCode / 100), `${payload} → ${res.statusCode}`).toBe(4);
    }
    const empty = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), 'content-type': 'application/json' },
    });
    expectProblem(empty, 400, 'malformed-json');
    const bad = [
      { method: 'GET' as const, url: `/v1/code-runs/${'x'.repeat(300)}` },
      { method: 'GET' as const, url: '/v1/sessions/s1/code-runs?limit=abc' },
      { method: 'GET' as const, url: '/v1/code-runs/%E0%A4%A/events' },
      { method: 'POST' as const, url: '/v1/code-runs/abc/calls/-1/result', payload: {} },
      { method: 'PATCH' as const, url: '/v1/platform/settings', payload: { expectedVersion: 'x' } },
      { method: 'POST' as const, url: '/v1/connections', payload: { name: 'x', kind: 'http' } },
    ];
    for (const r of bad) {
      const res = await app.inject({ ...r, headers: auth(r.method === 'PATCH' ? adminKey : key) });
      expect(Math.floor(res.statusCode / 100), `${r.method} ${r.url} → ${res.statusCode}`).toBe(4);
      expect(String(res.headers['content-type'])).toContain('application/problem+json');
    }
  });
  it('ids in URLs are bounded by the router at 256 characters, before any route runs', async () => {
    const at = await app.inject({
      method: 'GET',
      url: `/v1/code-runs/${'x'.repeat(256)}`,
      headers: auth(key),
    });
    expectProblem(at, 400, 'validation');
    expect(at.json().detail).toMatch(/^id: /);
    const past = await app.inject({
      method: 'GET',
      url: `/v1/code-runs/${'x'.repeat(257)}`,
      headers: auth(key),
    });
    expectProblem(past, 400, 'validation');
    expect(past.json().detail).toContain('is exceeding the max param length');
  });
  it('unknown routes and keys → 404/401 problems', async () => {
    expectProblem(await app.inject({ method: 'GET', url: '/v2/nothing' }), 404, 'not-found');
    expectProblem(await app.inject({ method: 'GET', url: '/v1/connections' }), 401, 'unauthorized');
    expectProblem(
      await app.inject({ method: 'GET', url: '/v1/connections', headers: auth('isk_wrong') }),
      401,
      'unauthorized',
    );
    expectProblem(
      await app.inject({ method: 'POST', url: '/internal/v1/code-runs/x/calls', payload: {} }),
      401,
      'unauthorized',
    );
  });
  it('missing scope → 403 forbidden', async () => {
    const res = await app.inject({
      method: 'PATCH',
      url: '/v1/platform/settings',
      headers: auth(key),
      payload: { expectedVersion: 1, codeMode: {} },
    });
    expectProblem(res, 403, 'forbidden');
    const list = await app.inject({
      method: 'GET',
      url: '/v1/sessions/s1/code-runs',
      headers: auth(otherKey),
    });
    expectProblem(list, 403, 'forbidden');
  });
});
