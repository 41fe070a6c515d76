/**
 * Malformed and abusive requests (issue 9 §5): deep JSON anywhere is a 4xx problem and consumes
 * nothing; failed authentication and open event streams are limited (429 + Retry-After); the
 * optional four-eyes rule. Real Redis, the real app through inject (and a real listener for SSE).
 */
import { get as httpGet, type IncomingMessage } from 'node:http';
import { keys } from '@islet/core';
import { createRunPolicyStore } from '@islet/runs';
import { beforeAll, describe, expect, it } from 'vitest';
import { onGatewayApp } from '../test/app-fixture.ts';
import { clientConnection, injectCall } from '../test/gateway-harness.ts';
import { httpAnswerOutcome } from './input-required.ts';

const INTERNAL = 'internal-token-for-abuse-tests';
let key: string;
let clientConn: string;
const auth = () => ({ authorization: `Bearer ${key}` });

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

const { app, deps } = await onGatewayApp({
  env: {
    ISLET_INTERNAL_TOKEN: INTERNAL,
    ISLET_CLIENT_CALL_TIMEOUT_MS: '20000',
    ISLET_RUN_RETENTION_SECONDS: '3600',
    ISLET_AUTH_FAILURES_PER_MINUTE: '5',
    ISLET_SSE_STREAMS_PER_TENANT: '3',
    ISLET_SSE_STREAMS_PER_KEY: '2',
    ISLET_TENANT_MAX_CONNECTIONS: '5',
  },
});

beforeAll(async () => {
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use', 'decisions'])).key;
  clientConn = await clientConnection(deps, 'acme');
});

async function submit(extra: Record<string, unknown> = {}, headers = auth()): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers,
    payload: {
      code: 'return 1',
      description: 'Abuse',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
      connections: [clientConn],
      ...extra,
    },
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
}

describe('deeply nested JSON', () => {
  it('a nested client answer is a 4xx problem and does not consume the call; the right answer then lands', async () => {
    const id = await submit();
    const served = injectCall({ app, deps }, INTERNAL, id, {
      index: 0,
      binding: 'phone.ask_user',
      argsJson: '{}',
    });
    const pendingKey = keys.clientCallPending(id, 0);
    for (let i = 0; i < 100 && !(await deps.redis.exists(pendingKey)); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await deps.redis.exists(pendingKey)).toBe(1);
    for (const depth of [65, 5000, 200_000]) {
      const bad = await app.inject({
        method: 'POST',
        url: `/v1/code-runs/${id}/calls/0/result`,
        headers: { ...auth(), 'content-type': 'application/json' },
        payload: `{"result":${nested(depth)}}`,
      });
      expect(bad.statusCode, bad.body).toBe(400);
      expect(String(bad.headers['content-type'])).toContain('application/problem+json');
      expect(bad.json().type).toBe('https://islet.dev/problems/json-too-deep');
      expect(await deps.redis.exists(pendingKey)).toBe(1);
    }
    const ok = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${id}/calls/0/result`,
      headers: auth(),
      payload: { result: { deep: JSON.parse(nested(60)) } },
    });
    expect(ok.statusCode, ok.body).toBe(202);
    expect((await served).json().outcome).toEqual({
      type: 'result',
      valueJson: JSON.stringify({ deep: JSON.parse(nested(60)) }),
    });
  });
});

describe('deeply nested App answers', () => {
  it("an http App's nested answer is a failed call, not a crash", () => {
    expect(httpAnswerOutcome(`{"a":${nested(65)}}`, 'op', 64)).toEqual({
      type: 'error',
      name: 'AppCallFailed',
      message: "the App's answer nests deeper than 64 levels",
      details: { reason: 'too-deep', maxDepth: 64 },
    });
    expect(httpAnswerOutcome(nested(100_000), 'op', 64)).toMatchObject({ details: { reason: 'too-deep' } });
    expect(httpAnswerOutcome(`{"a":${nested(63)}}`, 'op', 64)).toMatchObject({ type: 'result' });
    expect(httpAnswerOutcome(`"${'['.repeat(1000)}"`, 'op', 64)).toMatchObject({ type: 'result' });
  });
});

describe('retention of journaled outcomes', () => {
  it("a run's decisions are kept for the decision's wait plus the run's retention; its journal, with no expiry while the run lives, at its end", async () => {
    const id = await submit({ sandbox_permissions: 'workspace-write', justification: 'write files' });
    const served = await injectCall({ app, deps }, INTERNAL, id, {
      index: 3,
      binding: 'nope.none',
      argsJson: '{}',
    });
    expect(served.statusCode, served.body).toBe(200);
    // (The run record, its events and its journal get theirs when the run ends: run-store's finish.
    // A live run's journal has none, round 46: a run waiting past the retention keeps the calls it
    // answered, so a replay does not send them again — services/runs journal-life.test.ts.)
    expect(await deps.redis.ttl(`islet:journal:{${id}}`)).toBe(-1);
    // The wider-access request's: its wait (ISLET_DECISION_EXPIRE_MS, 24 h) plus the retention, so
    // a pending decision outlives a retention shorter than its wait (round 47, decision-life).
    const ttl = await deps.redis.ttl(`islet:decisions:{${id}}`);
    expect(ttl).toBeGreaterThan(86_400 + 3500);
    expect(ttl).toBeLessThanOrEqual(86_400 + 3600);
  });

  it('a nested body anywhere is a 400 problem (run submit, decision input, internal call arguments)', async () => {
    const deep = nested(100);
    const submitted = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: `{"code":"return 1","description":"d","sessionId":"s","turnId":"t","callId":"c","connections":[],"x":${deep}}`,
    });
    expect(submitted.statusCode).toBe(400);
    expect(submitted.json().type).toBe('https://islet.dev/problems/json-too-deep');
    const id = await submit({ sandbox_permissions: 'workspace-write', justification: 'w' });
    const decided = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${id}/decisions`,
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: `{"index":-1,"allow":true,"input":${deep}}`,
    });
    expect(decided.statusCode).toBe(400);
    expect(decided.json().type).toBe('https://islet.dev/problems/json-too-deep');
    expect((await deps.decisions.listRun(id))[0]?.state).toBe('pending');
    // Brackets inside strings are text, not nesting.
    const text = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(),
      payload: {
        code: `return "${'['.repeat(500)}"`,
        description: 'd',
        sessionId: 's',
        turnId: 't',
        callId: 'c',
      },
    });
    expect(text.statusCode, text.body).toBe(202);
    const call = await app.inject({
      method: 'POST',
      url: `/internal/v1/code-runs/${id}/calls`,
      headers: { authorization: `Bearer ${INTERNAL}` },
      payload: { attempt: 1, index: 0, binding: 'phone.ask_user', argsJson: deep },
    });
    expect(call.statusCode).toBe(400);
    expect(call.json().type).toBe('https://islet.dev/problems/json-too-deep');
  });
});

describe('limits answer 429 with Retry-After', () => {
  it('failed authentication is limited per client address; other addresses are not affected', async () => {
    // A fixed one-minute window: do not straddle its end.
    if (Date.now() % 60_000 > 50_000)
      await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
    const from = (remoteAddress: string, authorization: string) =>
      app.inject({ method: 'GET', url: '/v1/decisions', remoteAddress, headers: { authorization } });
    for (let i = 0; i < 5; i++) {
      const res = await from('198.51.100.7', `Bearer wrong-${i}`);
      expect(res.statusCode).toBe(401);
    }
    // A forged X-Forwarded-For does not move the prober to a fresh address (no proxy is trusted).
    const forged = await app.inject({
      method: 'GET',
      url: '/v1/decisions',
      remoteAddress: '198.51.100.7',
      headers: { authorization: 'Bearer wrong-forged', 'x-forwarded-for': '203.0.113.5' },
    });
    expect(forged.statusCode).toBe(429);
    for (const authorization of ['Bearer wrong-again', '']) {
      const limited = await from('198.51.100.7', authorization);
      expect(limited.statusCode).toBe(429);
      expect(limited.json().type).toBe('https://islet.dev/problems/rate-limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    // A key that resolves is never refused for its address's failures (auth-lockout.test.ts).
    expect((await from('198.51.100.7', `Bearer ${key}`)).statusCode).toBe(200);
    // The internal channel: a wrong token from the prober's address is refused too, but the right
    // one still passes (runners may share the prober's address: one node, one NAT).
    const internalAs = (token: string) =>
      app.inject({
        method: 'POST',
        url: '/internal/v1/code-runs/x/calls',
        remoteAddress: '198.51.100.7',
        headers: { authorization: `Bearer ${token}` },
        payload: {},
      });
    expect((await internalAs('wrong-internal-token-000000')).statusCode).toBe(429);
    expect((await internalAs(INTERNAL)).statusCode).not.toBe(429);
    expect((await from('198.51.100.8', `Bearer ${key}`)).statusCode).toBe(200);
  });

  it('open event streams are capped per key and per tenant across the stream lifetime', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const other = (await deps.tenants.createTenant({ id: 'other', name: 'Other' })).id;
    const otherKey = (await deps.tenants.createKey(other, ['apps.use'])).key;
    const secondKey = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.admin'])).key;
    const thirdKey = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.admin'])).key;
    const id = await submit();
    const otherRun = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { authorization: `Bearer ${otherKey}` },
      payload: { code: 'return 1', description: 'o', sessionId: 's', turnId: 't', callId: 'c' },
    });
    const open: IncomingMessage[] = [];
    const stream = (runId: string, k = key) =>
      new Promise<IncomingMessage>((resolve, reject) => {
        const req = httpGet(
          {
            host: '127.0.0.1',
            port,
            path: `/v1/code-runs/${runId}/events`,
            headers: { authorization: `Bearer ${k}` },
          },
          (res) => {
            open.push(res);
            resolve(res);
          },
        );
        req.on('error', reject);
      });
    const body = (res: IncomingMessage) =>
      new Promise<string>((resolve) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve(text));
      });
    try {
      expect((await stream(id)).statusCode).toBe(200);
      const second = await stream(id);
      expect(second.statusCode).toBe(200);
      // The key's cap (2) comes first: this key is full, its tenant is not.
      const third = await stream(id);
      expect(third.statusCode).toBe(429);
      expect(third.headers['retry-after']).toBe('5');
      expect(JSON.parse(await body(third))).toMatchObject({
        type: 'https://islet.dev/problems/rate-limited',
        detail: 'API key has 2 event streams open, the most one key may have; close one or retry in 5s',
        scope: 'key',
        limit: 2,
      });
      // Another key of the tenant still opens one: the tenant's third of three.
      expect((await stream(id, secondKey)).statusCode).toBe(200);
      // Now the tenant is full for every key, one with no stream open too.
      const full = await stream(id, thirdKey);
      expect(full.statusCode).toBe(429);
      expect(JSON.parse(await body(full))).toMatchObject({
        detail: 'tenant has 3 event streams open, the most it may have; close one or retry in 5s',
        scope: 'tenant',
      });
      // Another tenant is not affected.
      expect((await stream(otherRun.json().id as string, otherKey)).statusCode).toBe(200);
      // A closed stream gives its slot back to its key and tenant.
      second.destroy();
      let again: IncomingMessage | undefined;
      for (let i = 0; i < 50; i++) {
        again = await stream(id);
        if (again.statusCode === 200) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(again?.statusCode).toBe(200);
    } finally {
      for (const res of open) res.destroy();
    }
  });
});

describe('four-eyes', () => {
  it('on: the key that asked for sandbox_permissions cannot approve; another key can, and the submitter may deny', async () => {
    await deps.tenants.createTenant({ id: 'strict', name: 'Strict' });
    const submitter = (await deps.tenants.createKey('strict', ['apps.use', 'decisions'])).key;
    const reviewer = (await deps.tenants.createKey('strict', ['decisions'])).key;
    await createRunPolicyStore(deps.redis).set('strict', { style: 'run_code', fourEyes: true });
    const decide = (run: string, k: string, allow: boolean) =>
      app.inject({
        method: 'POST',
        url: `/v1/code-runs/${run}/decisions`,
        headers: { authorization: `Bearer ${k}` },
        payload: { index: -1, allow },
      });
    const headers = { authorization: `Bearer ${submitter}` };
    const asked = await submit(
      { sandbox_permissions: 'workspace-write', justification: 'w', connections: [] },
      headers,
    );
    const own = await decide(asked, submitter, true);
    expect(own.statusCode).toBe(403);
    expect(String(own.headers['content-type'])).toContain('application/problem+json');
    expect(own.json().type).toBe('https://islet.dev/problems/four-eyes');
    expect((await deps.decisions.listRun(asked))[0]?.state).toBe('pending');
    expect((await decide(asked, reviewer, true)).statusCode).toBe(200);
    const denied = await submit(
      { sandbox_permissions: 'workspace-write', justification: 'w', connections: [] },
      headers,
    );
    expect((await decide(denied, submitter, false)).statusCode).toBe(200);
  });

  it('on: one person with two keys is one principal and cannot approve their own request', async () => {
    await deps.tenants.createTenant({ id: 'strict2', name: 'Strict two' });
    const first = (
      await deps.tenants.createKey('strict2', ['apps.use', 'decisions'], { principal: 'mallory' })
    ).key;
    const second = (await deps.tenants.createKey('strict2', ['decisions'], { principal: 'mallory' })).key;
    const reviewer = (await deps.tenants.createKey('strict2', ['decisions'], { principal: 'rita' })).key;
    await createRunPolicyStore(deps.redis).set('strict2', { style: 'run_code', fourEyes: true });
    const asked = await submit(
      { sandbox_permissions: 'workspace-write', justification: 'w', connections: [] },
      { authorization: `Bearer ${first}` },
    );
    expect((await deps.runs.get(asked))?.principal).toBe('mallory');
    const decide = (k: string) =>
      app.inject({
        method: 'POST',
        url: `/v1/code-runs/${asked}/decisions`,
        headers: { authorization: `Bearer ${k}` },
        payload: { index: -1, allow: true },
      });
    const own = await decide(second);
    expect(own.statusCode, own.body).toBe(403);
    expect(own.json().type).toBe('https://islet.dev/problems/four-eyes');
    expect((await deps.decisions.listRun(asked))[0]?.state).toBe('pending');
    expect((await decide(reviewer)).statusCode).toBe(200);
  });

  it('off (the default): the submitting key may approve its own request', async () => {
    const asked = await submit({ sandbox_permissions: 'workspace-write', justification: 'w' });
    const res = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${asked}/decisions`,
      headers: auth(),
      payload: { index: -1, allow: true },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().state).toBe('allowed');
  });
});

describe('session ids in keys', () => {
  it("a session id spelled like another session's grant key is refused at the edge, naming the field", async () => {
    const victim = await submit({ sessionId: 'victim' });
    expect(victim).toBeTruthy();
    for (const sessionId of [
      `victim:grant:${clientConn}`,
      'a}b',
      'x y',
      '../up',
      '.hidden',
      'a'.repeat(129),
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: auth(),
        payload: { code: 'return 1', description: 'grant', sessionId },
      });
      expect(res.statusCode, sessionId).toBe(400);
      expect(res.json().type).toBe('https://islet.dev/problems/validation');
      expect(res.json().errors[0].path).toBe('sessionId');
    }
    const reader = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'])).key;
    for (const url of [
      '/v1/sessions/victim:grant:x/code-runs',
      '/v1/sessions/victim:grant:x/events',
      '/v1/sessions/victim:grant:x/files',
    ]) {
      const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${reader}` } });
      expect(res.statusCode, url).toBe(400);
      expect(res.body).toContain('sessionId');
    }
  });

  it("grants live in one hash per session: no session's grant is another's", async () => {
    await deps.sessions.grant('acme', 'victim', clientConn, 'ask_user', 'key-x', 60);
    expect(await deps.sessions.granted('acme', 'victim', clientConn, 'ask_user')).toBe(true);
    expect(await deps.sessions.granted('acme', 'victim', clientConn, 'other')).toBe(false);
    expect(await deps.sessions.granted('acme', `victim:grant:${clientConn}`, clientConn, 'ask_user')).toBe(
      false,
    );
    expect(await deps.redis.type(keys.sessionGrants('acme', 'victim'))).toBe('hash');
  });
});

describe('connections per tenant', () => {
  it('a flood of parallel creates stops at the quota (409 problem); another tenant is not affected', async () => {
    await deps.tenants.createTenant({ id: 'conns', name: 'Conns' });
    const k = (await deps.tenants.createKey('conns', ['apps.use'])).key;
    const create = (key: string, i: number) =>
      app.inject({
        method: 'POST',
        url: '/v1/connections',
        headers: { authorization: `Bearer ${key}` },
        payload: { name: `Phone ${i}`, kind: 'client', tools: [{ name: 'ask', inputSchema: {} }] },
      });
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => create(k, i)));
    expect(answers.filter((r) => r.statusCode === 201)).toHaveLength(5);
    const refused = answers.filter((r) => r.statusCode !== 201);
    for (const r of refused) {
      expect(r.statusCode, r.body).toBe(409);
      expect(r.json().type).toBe('https://islet.dev/problems/connection-quota-exceeded');
    }
    expect((await deps.connections.list('conns')).length).toBe(5);
    expect((await create(key, 99)).statusCode).toBe(201);
  });
});
