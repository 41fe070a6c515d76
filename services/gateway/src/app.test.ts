import { EventEmitter, getEventListeners } from 'node:events';
import { channels, keys } from '@islet/core';
import { runFixture } from '@islet/testkit';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GatewayAppUnderTest, startGatewayApp, type TestGatewayDeps } from '../test/gateway-harness.ts';
import { createAuth } from './auth.ts';
import { createBindingCalls } from './binding-calls.ts';
import { declareBindings, schemaToTs } from './code-api.ts';
import { slugify } from './connections.ts';
import { createDecisionsService } from './decisions-service.ts';
import { createMcpApps } from './mcp-apps.ts';
import { clientGone } from './problem-reply.ts';
import { registerRoutes } from './routes/index.ts';
import { createGatewayRecovery } from './run-recovery.ts';
import { createRunsService } from './runs-service.ts';

let gateway: GatewayAppUnderTest;
let app: FastifyInstance;
let deps: TestGatewayDeps;
let key: string;
let otherKey: string;
let adminKey: string;
let limitedKey: string;

const auth = (k: string) => ({ authorization: `Bearer ${k}` });
const run = (extra: Record<string, unknown> = {}) => ({
  code: 'return 1',
  description: 'Return the number one',
  sessionId: 's1',
  turnId: 't1',
  callId: 'c1',
  ...extra,
});

beforeAll(async () => {
  gateway = await startGatewayApp({ env: { ISLET_BODY_LIMIT_BYTES: '65536' } });
  ({ app, deps } = gateway);
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  await deps.tenants.createTenant({ id: 'other', name: 'Other' });
  await deps.tenants.createTenant({ id: 'limited', name: 'Limited', rateLimitPerMinute: 3 });
  limitedKey = (await deps.tenants.createKey('limited', ['apps.use'])).key;
  key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'])).key;
  otherKey = (await deps.tenants.createKey('other', ['apps.use'])).key;
  adminKey = (await deps.tenants.createKey('acme', ['platform.admin'])).key;
});

afterAll(() => gateway?.close());

function expectProblem(
  res: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  status: number,
  code: string,
) {
  expect(res.statusCode).toBe(status);
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
  const body = res.json() as { type: string; status: number; title: string };
  expect(body.type).toBe(`https://islet.dev/problems/${code}`);
  expect(body.status).toBe(status);
  expect(body.title).toBeTruthy();
  return body as { detail?: string; type: string };
}

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
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(500);
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
      expect(res.statusCode, `${r.method} ${r.url}`).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, `${r.method} ${r.url}`).toBeLessThan(500);
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

describe('rate limit', () => {
  it('answers 429 with Retry-After past the tenant limit', async () => {
    const codes: number[] = [];
    let last: Awaited<ReturnType<typeof app.inject>> | undefined;
    for (let i = 0; i < 5; i++) {
      last = await app.inject({ method: 'GET', url: '/v1/connections', headers: auth(limitedKey) });
      codes.push(last.statusCode);
    }
    expect(codes.slice(0, 3)).toEqual([200, 200, 200]);
    expect(codes[4]).toBe(429);
    expectProblem(last!, 429, 'rate-limited');
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
  });
});

/** A submit with `k`'s key. */
const submitWith = (k: string, payload: Record<string, unknown> = run()) =>
  app.inject({ method: 'POST', url: '/v1/runs', headers: auth(k), payload });

describe('rate limit on submits', () => {
  it('a flood of parallel submits: exactly the limit is stored, the rest get 429 and store nothing', async () => {
    await deps.tenants.createTenant({ id: 'rl-flood', name: 'RL', rateLimitPerMinute: 4 });
    const k = (await deps.tenants.createKey('rl-flood', ['apps.use'])).key;
    // A bad body counts against the limit too (counted as it is answered, before its answer).
    expectProblem(await submitWith(k, run({ description: '' })), 400, 'validation');
    const answers = await Promise.all(Array.from({ length: 20 }, () => submitWith(k)));
    const codes = answers.map((a) => a.statusCode);
    expect(codes.filter((c) => c === 202)).toHaveLength(3);
    expect(codes.filter((c) => c === 429)).toHaveLength(17);
    for (const refused of answers.filter((a) => a.statusCode === 429)) {
      expectProblem(refused, 429, 'rate-limited');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect(await deps.runs.inFlightCount('rl-flood')).toBe(3);
    expect((await deps.runs.listSession('rl-flood', 's1', undefined, 100)).ids).toHaveLength(3);
  });
});

describe('rate limit on submits, counted in the admission', () => {
  // A fixed one-minute window: do not straddle its end.
  const inOneWindow = async () => {
    if (Date.now() % 60_000 > 50_000)
      await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
    return Math.floor(Date.now() / 60_000);
  };

  it('a submit has no count of its own; past the limit it is refused, and then refused at once without a Redis write', async () => {
    await deps.tenants.createTenant({ id: 'rl-adm', name: 'RL', rateLimitPerMinute: 2 });
    const k = (await deps.tenants.createKey('rl-adm', ['apps.use'])).key;
    const window = await inOneWindow();
    const counter = keys.rateWindow('rl-adm', window);
    const evalsha = vi.spyOn(deps.redis, 'evalsha');
    try {
      const submit = () => submitWith(k);
      const counts: (string | null)[] = [];
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await submit();
        codes.push(res.statusCode);
        counts.push(await deps.redis.get(counter));
        if (res.statusCode === 429) {
          const p = expectProblem(res, 429, 'rate-limited');
          expect(p.detail).toMatch(/^tenant rate limit of 2 requests per minute reached; retry in \d+s$/);
          expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        }
      }
      expect(codes).toEqual([202, 202, 429, 429]);
      // Counted in the admission's script (no COUNT_IN_WINDOW of the counter); the fourth never
      // reached Redis: this replica knew the window was past its limit.
      expect(counts).toEqual(['1', '2', '3', '3']);
      expect(evalsha.mock.calls.filter((c) => c[2] === counter)).toHaveLength(0);
      expect(await deps.runs.inFlightCount('rl-adm')).toBe(2);
      expect(await deps.redis.ttl(counter)).toBeGreaterThan(0);
    } finally {
      evalsha.mockRestore();
    }
  });

  it('a tenant refused for its limit is admitted again in the next window: the replica forgets the window', async () => {
    await deps.tenants.createTenant({ id: 'rl-next', name: 'RL', rateLimitPerMinute: 1 });
    const k = (await deps.tenants.createKey('rl-next', ['apps.use'])).key;
    await inOneWindow();
    expect((await submitWith(k)).statusCode).toBe(202);
    expectProblem(await submitWith(k), 429, 'rate-limited'); // the admission's refusal
    expectProblem(await submitWith(k), 429, 'rate-limited'); // this replica's, without Redis
    const realNow = Date.now.bind(Date);
    const later = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 60_000);
    try {
      expect((await submitWith(k)).statusCode).toBe(202);
      const counter = keys.rateWindow('rl-next', Math.floor(Date.now() / 60_000));
      expect(await deps.redis.get(counter)).toBe('1');
    } finally {
      later.mockRestore();
    }
  });

  it('a submit refused before its admission (its body, an unknown connection) is counted as it is answered', async () => {
    await deps.tenants.createTenant({ id: 'rl-early', name: 'RL', rateLimitPerMinute: 5 });
    const k = (await deps.tenants.createKey('rl-early', ['apps.use'])).key;
    const counter = keys.rateWindow('rl-early', await inOneWindow());
    expectProblem(await submitWith(k, run({ description: '' })), 400, 'validation');
    const unknown = await submitWith(k, run({ connections: ['conn_does_not_exist'] }));
    expect(unknown.statusCode).toBeGreaterThanOrEqual(400);
    expect(unknown.statusCode).toBeLessThan(500);
    expect((await submitWith(k)).statusCode).toBe(202);
    expect(await deps.redis.get(counter)).toBe('3');
  });

  it('with an Idempotency-Key the count is sent on arrival: a replay past the limit is refused', async () => {
    await deps.tenants.createTenant({ id: 'rl-idem', name: 'RL', rateLimitPerMinute: 1 });
    const k = (await deps.tenants.createKey('rl-idem', ['apps.use'])).key;
    const counter = keys.rateWindow('rl-idem', await inOneWindow());
    const headers = { ...auth(k), 'idempotency-key': 'rl-idem-1' };
    const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expect(first.statusCode).toBe(202);
    const replay = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expectProblem(replay, 429, 'rate-limited');
    expect(await deps.redis.get(counter)).toBe('2');
  });
});

describe('settings', () => {
  it('PATCH with a stale expectedVersion is a 409', async () => {
    const cur = (
      await app.inject({ method: 'GET', url: '/v1/platform/settings', headers: auth(key) })
    ).json();
    const ok = await app.inject({
      method: 'PATCH',
      url: '/v1/platform/settings',
      headers: auth(adminKey),
      payload: {
        expectedVersion: cur.version,
        codeMode: { timeoutMs: 30000, memoryMb: 64, outputBytes: 65536 },
      },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      version: cur.version + 1,
      codeMode: { enabled: false, timeoutMs: 30000 }, // off on a fresh install (document 003)
    });
    const stale = await app.inject({
      method: 'PATCH',
      url: '/v1/platform/settings',
      headers: auth(adminKey),
      payload: { expectedVersion: cur.version, codeMode: { enabled: false } },
    });
    const p = expectProblem(stale, 409, 'version-conflict');
    expect((p as unknown as { currentVersion: number }).currentVersion).toBe(cur.version + 1);
  });
});

describe('connections and code-api', () => {
  it('registers a connection and generates declarations from JSON Schema', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: auth(key),
      payload: {
        name: 'Work calendar',
        kind: 'http',
        url: 'http://127.0.0.1:1/app',
        tools: [
          {
            name: 'list-events',
            description: 'List the events of a day',
            inputSchema: {
              type: 'object',
              properties: { day: { type: 'string', description: 'ISO date' } },
              required: ['day'],
            },
            outputSchema: {
              type: 'object',
              properties: {
                events: {
                  type: 'array',
                  items: { type: 'object', properties: { title: { type: 'string' } } },
                },
              },
            },
          },
          {
            name: 'send_invite',
            policy: 'ask',
            inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
          },
        ],
        resources: [{ name: 'calendars' }],
      },
    });
    expect(res.statusCode).toBe(201);
    const c = res.json();
    expect(c.slug).toBe('work_calendar');
    expect(c.bindings).toEqual([
      'apps.work_calendar.list_events',
      'apps.work_calendar.send_invite',
      'apps.work_calendar.calendars',
    ]);
    const dup = await app.inject({
      method: 'POST',
      url: '/v1/connections',
      headers: auth(key),
      payload: { name: 'work-calendar', kind: 'client' },
    });
    expectProblem(dup, 409, 'conflict');

    const api = await app.inject({ method: 'GET', url: '/v1/code-api?q=events', headers: auth(key) });
    const body = api.json();
    expect(body.bindings.map((b: { binding: string }) => b.binding)).toEqual(['work_calendar.list_events']);
    expect(body.declarations).toContain('namespace work_calendar');
    expect(body.declarations).toContain('function list_events(args: {');
    expect(body.declarations).toContain('day: string;');
    expect(body.declarations).toContain('Promise<{');
    // The declarations are valid TypeScript (parsed by the compiler itself).
    const ts = (await import('typescript')).default;
    const all = (await app.inject({ method: 'GET', url: '/v1/code-api', headers: auth(key) })).json()
      .declarations as string;
    const file = ts.createSourceFile('apps.d.ts', all, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    expect((file as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics).toEqual([]);
    const byConn = await app.inject({
      method: 'GET',
      url: `/v1/code-api?connection=${c.id}`,
      headers: auth(key),
    });
    expect(byConn.json().bindings).toHaveLength(3);
    const otherTenant = await app.inject({ method: 'GET', url: '/v1/code-api', headers: auth(otherKey) });
    // Another tenant sees none of acme's connections, only the built-in files.* bindings.
    expect(otherTenant.json().bindings.map((b: { binding: string }) => b.binding)).toEqual([
      'files.read',
      'files.write',
      'files.list',
      'files.remove',
    ]);
    expectProblem(
      await app.inject({ method: 'GET', url: `/v1/connections/${c.id}`, headers: auth(otherKey) }),
      404,
      'not-found',
    );
    expectProblem(
      await app.inject({ method: 'DELETE', url: `/v1/connections/${c.id}`, headers: auth(otherKey) }),
      404,
      'not-found',
    );
  });
  it('slugs and schema rendering', () => {
    expect(slugify('Work calendar')).toBe('work_calendar');
    expect(slugify('list-events')).toBe('list_events');
    expect(slugify('3D Printer!')).toBe('_3d_printer');
    expect(schemaToTs({ type: 'array', items: { enum: ['a', 'b'] } })).toBe('Array<"a" | "b">');
    expect(schemaToTs({ type: ['string', 'null'] })).toBe('string | null');
    expect(declareBindings([]).declarations).toContain('function call(name: string');
  });
});

describe('runs through inject (no runner)', () => {
  it('202 with Location, readable by its tenant only, idempotent with Idempotency-Key', async () => {
    const headers = { ...auth(key), 'idempotency-key': 'abc-1' };
    const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expect(first.statusCode).toBe(202);
    const rec = first.json();
    expect(first.headers.location).toBe(`/v1/code-runs/${rec.id}`);
    expect(rec).toMatchObject({
      session: 's1',
      turn: 't1',
      callId: 'c1',
      status: 'Running',
      code: 'return 1',
      reason: 'Return the number one',
      calls: [],
    });
    const again = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() });
    expect(again.json().id).toBe(rec.id);
    const conflict = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers,
      payload: run({ code: 'return 2' }),
    });
    expectProblem(conflict, 409, 'idempotency-conflict');
    expect(await deps.runQueue.queues['read-only'].getJob(rec.id)).toBeTruthy();

    expect(
      (await app.inject({ method: 'GET', url: `/v1/code-runs/${rec.id}`, headers: auth(key) })).statusCode,
    ).toBe(200);
    for (const r of [
      { method: 'GET' as const, url: `/v1/code-runs/${rec.id}` },
      { method: 'GET' as const, url: `/v1/code-runs/${rec.id}/events` },
      { method: 'POST' as const, url: `/v1/code-runs/${rec.id}/cancel` },
      { method: 'POST' as const, url: `/v1/code-runs/${rec.id}/calls/0/result`, payload: { result: 1 } },
    ]) {
      expectProblem(await app.inject({ ...r, headers: auth(otherKey) }), 404, 'not-found');
    }
    // Code is sealed at rest.
    expect(await deps.redis.hget(`islet:run:{${rec.id}}`, 'code')).toMatch(/^v1\./);

    // Cancel while queued ends it here, and takes its job's count off the pool's queued jobs.
    const queuedJobs = async () =>
      Object.values(await deps.redis.hgetall(keys.poolQueued('read-only'))).reduce(
        (n, v) => n + Number(v),
        0,
      );
    const queuedBefore = await queuedJobs();
    const cancelled = await app.inject({
      method: 'POST',
      url: `/v1/code-runs/${rec.id}/cancel`,
      headers: auth(key),
    });
    expect(cancelled.statusCode).toBe(202);
    expect(cancelled.json()).toMatchObject({
      status: 'Cancelled',
      result: { _tag: 'Failed', reason: 'Cancelled' },
    });
    expect(await queuedJobs()).toBe(queuedBefore - 1);
    expectProblem(
      await app.inject({ method: 'POST', url: `/v1/code-runs/${rec.id}/cancel`, headers: auth(key) }),
      409,
      'run-finished',
    );

    const list = await app.inject({
      method: 'GET',
      url: '/v1/sessions/s1/code-runs?limit=1',
      headers: auth(key),
    });
    expect(list.json().items[0].id).toBe(rec.id);
  });
  it('re-queues a run left without a job (gateway died between record and queue)', async () => {
    const now = Date.now();
    const orphan = runFixture('orphan-1', { session: 's-orphan', createdAt: now - 120_000, clockMs: now });
    await deps.runs.create(orphan);
    await deps.runs.create({ ...orphan, id: 'young-1', createdAt: now, updatedAt: now });
    const runsService = createRunsService(deps);
    const recovery = createGatewayRecovery(deps, runsService, createDecisionsService(deps, runsService), {
      inFlightIntervalMs: 2000,
    });
    const requeued = async () =>
      (await recovery.tick()).filter((a) => a.action.type === 'enqueue').map((a) => a.runId);
    expect(await requeued()).toEqual(['orphan-1']);
    expect(await deps.runQueue.queues['read-only'].getJob('orphan-1')).toBeTruthy();
    expect(await deps.runQueue.queues['read-only'].getJob('young-1')).toBeFalsy();
    // The lock makes a second walk in the same interval a no-op.
    expect(await requeued()).toEqual([]);
  });
  it('Idempotency-Key: a retry takes over the key of a first request that died before storing its run', async () => {
    const headers = { ...auth(key), 'idempotency-key': 'died-1' };
    const payload = run({ sessionId: 'idem-died' });
    // The first request claims the key, then "dies": its store fails and so does its cleanup.
    const create = vi.spyOn(deps.runs, 'create').mockRejectedValueOnce(new Error('gateway killed'));
    const release = vi
      .spyOn(deps.runs, 'releaseIdempotency')
      .mockRejectedValueOnce(new Error('gateway killed'));
    try {
      const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
      expect(first.statusCode).toBe(500);
    } finally {
      create.mockRestore();
      release.mockRestore();
    }
    const held = JSON.parse((await deps.redis.get(keys.idempotency('acme', 'died-1'))) ?? '{}');
    expect(held.runId).toEqual(expect.any(String));
    expect(await deps.runs.get(held.runId)).toBeNull();
    // The retry waits out the first request's grace, then takes the key over: one run, its own.
    const retry = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    expect(retry.statusCode).toBe(202);
    expect(retry.json().id).not.toBe(held.runId);
    expect(JSON.parse((await deps.redis.get(keys.idempotency('acme', 'died-1'))) ?? '{}').runId).toBe(
      retry.json().id,
    );
    const again = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    expect(again.json().id).toBe(retry.json().id);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
  it('Idempotency-Key: a SET sent again after a lost reply finds its own write and goes on', async () => {
    const headers = { ...auth(key), 'idempotency-key': 'resent-1' };
    const realSet = deps.redis.set.bind(deps.redis) as (...args: unknown[]) => Promise<unknown>;
    // As ioredis resending an unanswered SET NX after a reconnect: the write landed, the answer is nil.
    const set = vi.spyOn(deps.redis, 'set').mockImplementationOnce((async (...args: unknown[]) => {
      await realSet(...args);
      return null;
    }) as never);
    // A first request's key would send this one to wait for that run and then take the key over.
    const takeOver = vi.spyOn(deps.runs, 'takeOverIdempotency');
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers,
        payload: run({ sessionId: 'idem-resent' }),
      });
      expect(res.statusCode).toBe(202);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect(takeOver).not.toHaveBeenCalled();
      expect(await deps.runs.get(res.json().id)).not.toBeNull();
    } finally {
      set.mockRestore();
      takeOver.mockRestore();
    }
  });
  it('answers 429 quota-exceeded past the in-flight quota', async () => {
    await deps.tenants.createTenant({ id: 'tiny', name: 'Tiny', maxInFlightRuns: 1 });
    const tinyKey = (await deps.tenants.createKey('tiny', ['apps.use'])).key;
    const first = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(tinyKey),
      payload: run(),
    });
    expect(first.statusCode).toBe(202);
    const second = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(tinyKey),
      payload: run(),
    });
    expectProblem(second, 429, 'quota-exceeded');
    expect(second.headers['retry-after']).toBe('1');
  });
  it('Prefer: wait: an attempt starting (Running, tagged) wakes no read; the end does', async () => {
    const service = createRunsService(deps);
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(key),
      payload: run({ sessionId: 'wait-tag' }),
    });
    expect(res.statusCode).toBe(202);
    const created = await deps.runs.get(res.json().id);
    if (!created) throw new Error('run not stored');
    const get = vi.spyOn(deps.runs, 'get');
    try {
      const waiting = service.waitForEnd(created.id, 10_000);
      await new Promise((r) => setTimeout(r, 100));
      const readsBefore = get.mock.calls.length;
      expect(await deps.runs.setStatus(created, 'Running', { attempt: 1 })).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      expect(get.mock.calls.length).toBe(readsBefore);
      await deps.runs.finish(created, {
        status: 'Cancelled',
        result: {
          _tag: 'Failed',
          reason: 'Cancelled',
          kind: 'abort',
          message: 'ended by the test',
          logs: [],
        },
        text: 'code run failed (abort): ended by the test',
        kind: 'abort',
      });
      expect((await waiting)?.status).toBe('Cancelled');
      expect(get.mock.calls.length).toBe(readsBefore + 1);
    } finally {
      get.mockRestore();
    }
  });
  it('a 202 answers the run as accepted without reading its journal; a later read does', async () => {
    const listCalls = vi.spyOn(deps.journal, 'listCalls');
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: auth(key),
        payload: run({ sessionId: 'no-journal-read' }),
      });
      expect(res.statusCode).toBe(202);
      const body = res.json() as { id: string; status: string; calls: unknown[] };
      expect(body).toMatchObject({ status: 'Running', calls: [] });
      expect(listCalls).not.toHaveBeenCalled();
      // A call journaled afterwards shows in a read of the run (which reads the journal).
      const attempt = await deps.journal.nextAttempt(body.id);
      await deps.journal.claim(body.id, attempt, {
        index: 0,
        binding: 'crm.find',
        argsJson: '{}',
        sendNow: true,
      });
      const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${body.id}`, headers: auth(key) });
      expect(listCalls).toHaveBeenCalledWith(body.id);
      expect(read.json().calls).toEqual([expect.objectContaining({ index: 0, binding: 'crm.find' })]);
    } finally {
      listCalls.mockRestore();
    }
  });
  it('Prefer: wait: the end is pushed with the record and journal, and answered without reading them', async () => {
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10' },
      payload: run({ sessionId: 'push-end' }),
    });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await deps.redis.zrange(keys.sessionRuns('acme', 'push-end'), 0, -1))[0];
      if (!id) await new Promise((r) => setTimeout(r, 20));
    }
    if (!id) throw new Error('run not stored');
    const stored = await deps.runs.get(id);
    if (!stored) throw new Error('run not stored');
    expect(stored.pushEnd).toBe(true);
    const attempt = await deps.journal.nextAttempt(id);
    await deps.journal.claim(id, attempt, {
      index: 0,
      binding: 'crm.find',
      argsJson: '{"q":1}',
      sendNow: true,
    });
    await deps.journal.complete(id, 0, { type: 'result', valueJson: '{"found":2}' });
    const get = vi.spyOn(deps.runs, 'get');
    const list = vi.spyOn(deps.journal, 'list');
    try {
      await deps.runs.finish(stored, {
        status: 'Completed',
        result: { _tag: 'Completed', value: 2, logs: [{ level: 'log', text: 'pushed' }] },
        text: 'pushed',
        kind: 'none',
      });
      const res = await answer;
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ id, status: 'Completed', result: { value: 2 } });
      expect(JSON.stringify(body.result)).toContain('pushed');
      expect(body.calls).toEqual([expect.objectContaining({ index: 0, binding: 'crm.find' })]);
      expect(get).not.toHaveBeenCalled();
      expect(list).not.toHaveBeenCalled();
      // The answer from the pushed end is byte for byte the record a read of the run answers
      // (its description, opened when the record is built, included).
      const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
      expect(read.statusCode).toBe(200);
      expect(res.body).toBe(read.body);
      expect(body.reason).toBe(stored.description);
    } finally {
      get.mockRestore();
      list.mockRestore();
    }
  });
  it('a run too large to push ends as its bare id; its waiter reads it (and a run nobody waits on pushes nothing)', async () => {
    const sub = deps.redis.duplicate();
    const messages: string[] = [];
    sub.on('message', (_channel: string, message: string) => messages.push(message));
    await sub.subscribe(channels.runEvents);
    try {
      const large = run({ sessionId: 'push-large', code: `return 1 // ${'x'.repeat(40_000)}` });
      const answer = app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: { ...auth(key), prefer: 'wait=10' },
        payload: large,
      });
      const quiet = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: auth(key),
        payload: run({ sessionId: 'push-none' }),
      });
      let id: string | undefined;
      for (let i = 0; i < 100 && !id; i++) {
        id = (await deps.redis.zrange(keys.sessionRuns('acme', 'push-large'), 0, -1))[0];
        if (!id) await new Promise((r) => setTimeout(r, 20));
      }
      const stored = id ? await deps.runs.get(id) : null;
      const unwaited = await deps.runs.get(quiet.json().id);
      if (!stored || !unwaited) throw new Error('runs not stored');
      expect(unwaited.pushEnd).toBeUndefined();
      const end: Parameters<typeof deps.runs.finish>[1] = {
        status: 'Completed',
        result: { _tag: 'Completed', value: 3, logs: [] },
        text: '3',
        kind: 'none',
      };
      await deps.runs.finish(unwaited, end);
      await deps.runs.finish(stored, end);
      const res = await answer;
      expect(res.json()).toMatchObject({ id: stored.id, status: 'Completed', result: { value: 3 } });
      await new Promise((r) => setTimeout(r, 100));
      expect(messages).toContain(stored.id);
      expect(messages).toContain(unwaited.id);
      expect(messages.filter((m) => m.includes(' end '))).toEqual([]);
    } finally {
      sub.disconnect();
    }
  });
  it('the in-flight quota holds under a flood of parallel submits (check and count are one step)', async () => {
    await deps.tenants.createTenant({ id: 'flood', name: 'Flood', maxInFlightRuns: 5 });
    const floodKey = (await deps.tenants.createKey('flood', ['apps.use'])).key;
    const queue = deps.runQueue.queues['read-only'];
    const jobsBefore = await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed');
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        app.inject({ method: 'POST', url: '/v1/runs', headers: auth(floodKey), payload: run() }),
      ),
    );
    const codes = answers.map((a) => a.statusCode);
    expect(codes.filter((c) => c === 202)).toHaveLength(5);
    expect(codes.filter((c) => c === 429)).toHaveLength(35);
    for (const refused of answers.filter((a) => a.statusCode === 429))
      expectProblem(refused, 429, 'quota-exceeded');
    expect(await deps.runs.inFlightCount('flood')).toBe(5);
    // On one server a refused submit's job goes out with its record (one round trip) and is taken
    // back: the queue holds the 5 admitted runs' jobs, none of the 35 refused.
    expect(await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed')).toBe(jobsBefore + 5);
    // The pool's count of the tenant's queued jobs (the runners' fair share) took them back too.
    expect(await deps.redis.hget(keys.poolQueued('read-only'), 'flood')).toBe('5');
  });
  it('two principals racing for a new session: one owns it, every run of the other gets 404', async () => {
    await deps.tenants.createTenant({ id: 'race', name: 'Race' });
    const ann = (await deps.tenants.createKey('race', ['apps.use'], { principal: 'ann' })).key;
    const bob = (await deps.tenants.createKey('race', ['apps.use'], { principal: 'bob' })).key;
    const submit = (k: string) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers: auth(k), payload: run({ sessionId: 'raced' }) });
    const who = Array.from({ length: 20 }, (_, i) => (i % 2 ? 'ann' : 'bob'));
    const queue = deps.runQueue.queues['read-only'];
    const jobsBefore = await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed');
    const answers = await Promise.all(who.map((p) => submit(p === 'ann' ? ann : bob)));
    const owners = new Set(who.filter((_, i) => answers[i]?.statusCode === 202));
    expect(owners.size).toBe(1);
    expect(answers.filter((a) => a.statusCode === 202)).toHaveLength(10);
    for (const refused of answers.filter((a) => a.statusCode !== 202))
      expectProblem(refused, 404, 'not-found');
    // Nothing of the refused runs stays: no record, no job.
    expect(await queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed')).toBe(jobsBefore + 10);
    expect(await deps.redis.hget(keys.poolQueued('read-only'), 'race')).toBe('10');
    const ids = await deps.redis.zrange(keys.sessionRuns('race', 'raced'), 0, -1);
    expect(ids).toHaveLength(10);
  });
  it('serves health, metrics, openapi and docs', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const m = await app.inject({ method: 'GET', url: '/metrics' });
    expect(m.body).toContain('islet_http_requests_total');
    expect(m.body).toContain('islet_queue_depth{mode="read-only",state="waiting"');
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/v1/runs');
    const docs = await app.inject({ method: 'GET', url: '/docs' });
    expect(docs.body).toContain('swagger-ui');
    expect(docs.headers['content-security-policy']).not.toMatch(/https:|validator|upgrade-insecure/);
    expect((await app.inject({ method: 'GET', url: '/docs/json' })).json()).toEqual(doc);
  });
  it('describes every registered route in /openapi.json, and nothing else', async () => {
    // A bare instance with an onRoute hook sees every route registerRoutes adds (buildApp's too).
    const registered = new Set<string>();
    const probe = Fastify();
    probe.addHook('onRoute', (route) => {
      // Hidden: the pages and assets of the API reference and the queue board (not API routes).
      if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const path = route.url.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{path}');
      for (const m of methods) if (m !== 'HEAD') registered.add(`${m.toLowerCase()} ${path}`);
    });
    await registerRoutes(probe, {
      closing: new AbortController().signal,
      deps,
      auth: createAuth(deps),
      runsService: createRunsService(deps),
      bindingCalls: createBindingCalls(deps),
      mcpApps: createMcpApps(deps),
    });
    await probe.ready();
    await probe.close();
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const documented = new Set(
      Object.entries(doc.paths as Record<string, object>).flatMap(([p, ops]) =>
        Object.keys(ops).map((m) => `${m} ${p}`),
      ),
    );
    expect(registered.size).toBeGreaterThan(20);
    expect([...documented].sort()).toEqual([...registered].sort());
  });
});

describe('clientGone', () => {
  it('aborts when the client goes or the app closes, and leaves no listener on the app signal', () => {
    const closing = new AbortController();
    const fakeReply = (finished: boolean) => {
      const raw = Object.assign(new EventEmitter(), { writableFinished: finished });
      return { reply: { raw } as unknown as FastifyReply, raw };
    };
    for (let i = 0; i < 20; i++) {
      const { reply, raw } = fakeReply(true);
      const signal = clientGone(reply, closing.signal);
      raw.emit('close');
      expect(signal.aborted).toBe(false);
    }
    expect(getEventListeners(closing.signal, 'abort')).toHaveLength(0);
    const gone = fakeReply(false);
    const goneSignal = clientGone(gone.reply, closing.signal);
    gone.raw.emit('close');
    expect(goneSignal.aborted).toBe(true);
    const open = clientGone(fakeReply(false).reply, closing.signal);
    closing.abort();
    expect(open.aborted).toBe(true);
  });
});
