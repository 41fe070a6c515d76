/**
 * Decisions over HTTP with real processes (two gateways, runners, their own Redis): stop and
 * replay, denial, input, hold in place, wider access for one run, expiry, tenant walls, and both
 * time-budget accountings. Quotes the Code Mode document's decision-request shape.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { pausedRunsKey } from '@islet/protocol';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, readSse, sleep, startAppServer, until } from '../e2e/helpers.ts';

let cluster: Cluster;
let a: Api;
let b: Api;
let other: Api;
let noDecide: Api;
let slowpoke: Api;
let redis: Redis;
let app: Awaited<ReturnType<typeof startAppServer>>;
let mail: Loose;

// Stop-and-replay is Code Mode's approval (document 003); tests of run_code's rules say so.
const run = (code: string, extra: Record<string, unknown> = {}) => ({
  style: 'code-mode',
  code,
  description: 'Read a note and mail it',
  sessionId: 'sess-d',
  turnId: 'turn-d',
  callId: 'call-9',
  connections: [mail.id],
  ...extra,
});
const deliveriesOf = (key: string) => app.deliveries.filter((d) => d.idempotencyKey === key);
const status = async (id: string, want: string, timeoutMs = 20_000) =>
  until(async () => {
    const r = await a('GET', `/v1/code-runs/${id}`);
    return r.body.status === want && r.body;
  }, timeoutMs);

beforeAll(async () => {
  cluster = await startCluster({
    gateways: 2,
    runners: [
      { modes: ['read-only'], concurrency: 1 },
      { modes: ['workspace-write'], concurrency: 1 },
    ],
    env: {
      ISLET_RUNNER_LOCK_DURATION_MS: '3000',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '1000',
      ISLET_DECISION_EXPIRE_MS: '6000',
    },
  });
  redis = new Redis(cluster.redisUrl);
  a = api(cluster.gatewayUrls[0]!, cluster.devKey);
  b = api(cluster.gatewayUrls[1]!, cluster.devKey);
  for (const id of ['globex', 'slowpoke']) {
    expect((await a('POST', '/v1/admin/tenants', { id, name: id })).status).toBe(201);
  }
  const otherKey = (await a('POST', '/v1/admin/tenants/globex/keys', { scopes: ['apps.use', 'decisions'] }))
    .body.key;
  other = api(cluster.gatewayUrls[1]!, otherKey);
  const limitedKey = (await a('POST', `/v1/admin/tenants/${cluster.tenantId}/keys`, { scopes: ['apps.use'] }))
    .body.key;
  noDecide = api(cluster.gatewayUrls[0]!, limitedKey);
  const slowKey = (await a('POST', '/v1/admin/tenants/slowpoke/keys', { scopes: ['apps.use', 'decisions'] }))
    .body.key;
  slowpoke = api(cluster.gatewayUrls[1]!, slowKey);
  app = await startAppServer(async (d) => {
    if (d.body.tool === 'slow') await sleep(1500);
    const body = d.body as Loose;
    return {
      status: 200,
      body: JSON.stringify({
        structuredContent: { tool: d.body.tool, echo: d.body.arguments, input: body.input ?? null },
      }),
    };
  });
  const tools = [
    { name: 'read_note', policy: 'allow' },
    { name: 'send_email', policy: 'ask' },
    { name: 'slow', policy: 'allow' },
  ];
  const created = await a('POST', '/v1/connections', { name: 'Mail', kind: 'http', url: app.url, tools });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  mail = created.body;
}, 90_000);

afterAll(async () => {
  redis?.disconnect();
  await app?.close();
  await cluster?.stop();
});

const MAIL = `
const note = await apps.mail.read_note({ id: 7 });
const sent = await apps.mail.send_email({ to: "team@example.com", note: note.structuredContent.echo.id });
return { sent: sent.structuredContent.echo, input: sent.structuredContent.input, now: Date.now(), r: Math.random() };`;

describe('stop and decide', () => {
  it('waits without holding a runner slot, shows the document-shaped request, replays after allow', async () => {
    const submitted = await a('POST', '/v1/runs', run(MAIL));
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    const events = await readSse(`${cluster.gatewayUrls[1]}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'decision.needed',
    });
    const needed = events.find((e) => e.event === 'decision.needed')?.data;
    const expected = {
      capability: { action: 'apps.call', target: `${mail.id}/send_email` },
      toolCallId: 'call-9',
      app: { callId: 'call-9:1', arguments: { to: 'team@example.com', note: 7 } },
      code: { run: id, index: 1, code: MAIL },
    };
    expect(needed).toMatchObject(expected);
    const waitingRecord = await status(id, 'Waiting');
    expect(waitingRecord.calls.map((c: Loose) => [c.index, c.outcome._tag])).toEqual([
      [0, 'Done'],
      [1, 'Waiting'],
    ]);
    const pending = await b('GET', '/v1/decisions');
    expect(pending.status).toBe(200);
    expect(pending.body.items.find((d: Loose) => d.code.run === id)).toMatchObject({
      id: `${id}:1`,
      state: 'pending',
      approval: 'stop',
      ...expected,
      app: { ...expected.app, id: mail.id },
    });
    expect(await redis.zscore(pausedRunsKey('read-only'), id)).not.toBeNull();

    // The only read-only slot is free: another run completes while this one waits.
    const meanwhile = await a('POST', '/v1/runs', run('return "free slot"'), { prefer: 'wait=20' });
    expect(meanwhile.body).toMatchObject({ status: 'Completed', result: { value: 'free slot' } });

    // Tenant walls and scopes.
    expect((await other('GET', '/v1/decisions')).body.items).toEqual([]);
    const foreign = await other('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
    expect(foreign.status).toBe(404);
    expect((await noDecide('GET', '/v1/decisions')).status).toBe(403);
    expect((await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: 'yes' })).status).toBe(400);

    const answered = await b('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ state: 'allowed', ...expected });
    const again = await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: false });
    expect(again.status).toBe(409);

    const done = await status(id, 'Completed');
    expect(done.result.value).toMatchObject({
      sent: { to: 'team@example.com', note: 7 },
      input: null,
      now: submitted.body.createdAt,
    });
    expect(done.calls.map((c: Loose) => [c.index, c.binding, c.outcome._tag])).toEqual([
      [0, 'mail.read_note', 'Done'],
      [1, 'mail.send_email', 'Done'],
    ]);
    expect(deliveriesOf(`${id}:0`)).toHaveLength(1); // replayed, not resent
    expect(deliveriesOf(`${id}:1`)).toHaveLength(1);
    expect(await redis.zscore(pausedRunsKey('read-only'), id)).toBeNull();
    expect((await a('GET', '/v1/decisions')).body.items.map((d: Loose) => d.code.run)).not.toContain(id);
  });

  it('a replay that makes other calls than the journal fails with ReplayMismatch and sends nothing', async () => {
    const id = (await a('POST', '/v1/runs', run(MAIL))).body.id as string;
    await status(id, 'Waiting');
    // Make the journal disagree with the program (as if the program had called another binding).
    const key = `islet:journal:{${id}}`;
    const entry = JSON.parse((await redis.hget(key, '0')) ?? '{}');
    await redis.hset(key, '0', JSON.stringify({ ...entry, b: 'mail.other_tool' }));
    await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
    const ended = await status(id, 'Failed');
    expect(ended.result).toMatchObject({ _tag: 'Failed', reason: 'ReplayMismatch' });
    expect(ended.result.message).toContain('mail.read_note');
    // It reads as what it is (Code Mode's ReplayMismatch), not as a stopped run's abort.
    expect(ended.text).toBe(`code run failed (ReplayMismatch): ${ended.result.message}`);
    expect(deliveriesOf(`${id}:0`)).toHaveLength(1);
    expect(deliveriesOf(`${id}:1`)).toHaveLength(0); // the approved call was never sent
  });

  it('a denial reaches the program as AppCallDenied, and nothing is sent', async () => {
    const code = `try { await apps.mail.send_email({ to: "x@example.com" }); return "sent" } catch (e) { return e.name }`;
    const id = (await a('POST', '/v1/runs', run(code))).body.id as string;
    await status(id, 'Waiting');
    expect((await a('POST', `/v1/code-runs/${id}/decisions`, { index: 0, allow: false })).status).toBe(200);
    const done = await status(id, 'Completed');
    expect(done.result.value).toBe('AppCallDenied');
    expect(deliveriesOf(`${id}:0`)).toHaveLength(0);
    expect(done.calls[0].outcome.result).toMatchObject({ _tag: 'Failed', error: { name: 'AppCallDenied' } });
  });

  it('a decision can carry input for the App (AppInputRequired)', async () => {
    const id = (await a('POST', '/v1/runs', run(MAIL))).body.id as string;
    await status(id, 'Waiting');
    await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true, input: { otp: '1234' } });
    const done = await status(id, 'Completed');
    expect(done.result.value.input).toEqual({ otp: '1234' });
    expect(deliveriesOf(`${id}:1`).map((d) => (d.body as Loose).input)).toEqual([{ otp: '1234' }]);
  });

  it('an unanswered decision expires and the paused run ends Cancelled with a clear reason', async () => {
    const id = (await a('POST', '/v1/runs', run(MAIL))).body.id as string;
    await status(id, 'Waiting');
    const ended = await status(id, 'Cancelled', 20_000);
    expect(ended.result).toMatchObject({ _tag: 'Failed', reason: 'Cancelled', kind: 'abort' });
    expect(ended.result.message).toBe('decision expired: no answer within 6000ms; the run was stopped');
    expect(deliveriesOf(`${id}:1`)).toHaveLength(0);
    expect((await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true })).status).toBe(409);
  });
});

describe('hold in place', () => {
  it('the program waits inside its execution and goes on after the answer (no replay)', async () => {
    const id = (await a('POST', '/v1/runs', run(MAIL, { approval: 'hold' }))).body.id as string;
    await status(id, 'Waiting');
    const [pending] = (await a('GET', '/v1/decisions')).body.items.filter((d: Loose) => d.code.run === id);
    expect(pending).toMatchObject({ approval: 'hold', app: { callId: 'call-9:1' } });
    expect(await redis.zscore(pausedRunsKey('read-only'), id)).toBeNull(); // not stopped: it waits in its execution
    await b('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true });
    const done = await status(id, 'Completed');
    expect(done.result.value.sent).toEqual({ to: 'team@example.com', note: 7 });
    // One execution only: the record's attempt count never moved past 1.
    expect(await redis.hget(`islet:run:{${id}}`, 'attempts')).toBe('1');
    expect(deliveriesOf(`${id}:0`)).toHaveLength(1);
  });
});

describe('wider access for one run', () => {
  const code = 'return "ran wide"';
  const wide = {
    style: 'run_code',
    sandbox_permissions: 'workspace-write',
    justification: 'It writes the report into the workspace.',
  };

  it('asks before anything runs, then runs in the wider pool', async () => {
    const id = (await a('POST', '/v1/runs', run(code, wide))).body.id as string;
    await status(id, 'Waiting');
    const [d] = (await a('GET', '/v1/decisions')).body.items.filter((x: Loose) => x.code.run === id);
    expect(d).toMatchObject({
      capability: { action: 'sandbox.escalate', target: 'workspace-write' },
      justification: 'It writes the report into the workspace.',
      code: { run: id, index: -1, code },
    });
    await a('POST', `/v1/code-runs/${id}/decisions`, { index: -1, allow: true });
    expect((await status(id, 'Completed')).result.value).toBe('ran wide');
  });

  it('denied, it ends without running and is never repeated', async () => {
    const id = (await a('POST', '/v1/runs', run('await apps.mail.read_note({ id: 1 }); return 1', wide))).body
      .id as string;
    await status(id, 'Waiting');
    await a('POST', `/v1/code-runs/${id}/decisions`, { index: -1, allow: false });
    const ended = await status(id, 'Failed');
    expect(ended.result).toMatchObject({
      reason: 'Cancelled',
      kind: 'abort',
      message: 'wider access (workspace-write) was not allowed; the program did not run',
    });
    expect(ended.text).toBe(
      'code run failed (abort): wider access (workspace-write) was not allowed; the program did not run',
    );
    await sleep(1500);
    expect(deliveriesOf(`${id}:0`)).toHaveLength(0);
    expect((await a('GET', `/v1/code-runs/${id}`)).body.status).toBe('Failed');
  });
});

describe('timeout accounting per tenant', () => {
  it('Code Mode does not count App waits; a run_code-style tenant counts elapsed time', async () => {
    const slowCode = 'const r = await apps.mail.slow({}); return r.structuredContent.tool';
    // Code Mode's budget is its platform setting (1000 ms here); the App takes 1500 ms.
    const before = (await a('GET', '/v1/platform/settings')).body;
    const patched = await a('PATCH', '/v1/platform/settings', {
      expectedVersion: before.version,
      codeMode: { timeoutMs: 1000 },
    });
    expect(patched.status).toBe(200);
    try {
      const codeMode = await a('POST', '/v1/runs', run(slowCode), { prefer: 'wait=20' });
      expect(codeMode.body).toMatchObject({ status: 'Completed', result: { value: 'slow' } });
    } finally {
      await a('PATCH', '/v1/platform/settings', {
        expectedVersion: patched.body.version,
        codeMode: { timeoutMs: before.codeMode.timeoutMs },
      });
    }

    const policy = await a('PUT', '/v1/admin/tenants/slowpoke/run-policy', { style: 'run_code' });
    expect(policy.body.effective).toEqual({
      style: 'run_code',
      approval: 'hold',
      timeBudget: 'elapsed',
      fourEyes: false,
    });
    const conn = await slowpoke('POST', '/v1/connections', {
      name: 'Mail',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'slow' }],
    });
    const elapsed = await slowpoke(
      'POST',
      '/v1/runs',
      { ...run(slowCode, { timeoutMs: 800 }), style: undefined, connections: [conn.body.id] },
      { prefer: 'wait=20' },
    );
    expect(elapsed.body.status).toBe('Failed');
    expect(elapsed.body.result).toMatchObject({ reason: 'Timeout', kind: 'timeout' });
    expect(elapsed.body.text).toContain('code run failed (timeout)');
  });
});

describe('hold in place counts against a run_code-style budget', () => {
  it('an unanswered held call ends the run as a timeout, and its decision is no longer listed', async () => {
    await a('PUT', '/v1/admin/tenants/slowpoke/run-policy', { style: 'run_code' });
    const conn = await slowpoke('POST', '/v1/connections', {
      name: 'Asker',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'send_email', policy: 'ask' }],
    });
    expect(conn.status).toBe(201);
    const submitted = await slowpoke(
      'POST',
      '/v1/runs',
      {
        ...run('await apps.asker.send_email({ to: "x" }); return "sent"', { timeoutMs: 1500 }),
        style: undefined,
        connections: [conn.body.id],
      },
      { prefer: 'wait=20' },
    );
    // Prefer: wait answers as soon as the run waits for a decision; the budget keeps running.
    const res = {
      body: await until(async () => {
        const r = await slowpoke('GET', `/v1/code-runs/${submitted.body.id}`);
        return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) && r.body;
      }),
    };
    expect(res.body.status).toBe('Failed');
    expect(res.body.result).toMatchObject({ reason: 'Timeout', kind: 'timeout' });
    expect(res.body.text).toContain('code run failed (timeout): execution deadline reached (1500ms)');
    const listed = (await slowpoke('GET', '/v1/decisions')).body.items.map((d: Loose) => d.code.run);
    expect(listed).not.toContain(res.body.id);
    expect(deliveriesOf(`${res.body.id}:0`)).toHaveLength(0);
  });
});

describe('documented', () => {
  it('the OpenAPI document lists the decision and run-policy routes', async () => {
    const doc = (await a('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/decisions',
        '/v1/code-runs/{id}/decisions',
        '/v1/admin/tenants/{id}/run-policy',
      ]),
    );
    expect(doc.components.schemas.DecisionAnswer.required).toEqual(['index', 'allow']);
  });
});

describe('allow for the session', () => {
  const SEND = 'const s = await apps.mail.send_email({ to: "x" }); return s.structuredContent.tool';
  const pendingOf = async (id: string) =>
    until(async () => {
      const items = (await a('GET', '/v1/decisions')).body.items as Loose[];
      return items.find((d) => d.code.run === id);
    });

  it('a session-wide allow lets later calls of that tool in the session run without asking; other sessions still ask', async () => {
    const first = await a('POST', '/v1/runs', run(SEND, { sessionId: 'sess-grant', callId: 'g-1' }));
    expect(first.status).toBe(202);
    const decision = await pendingOf(first.body.id);
    // Wider access is never granted for a session (the run_code document: a new answer each run).
    const wider = await a('POST', `/v1/code-runs/${first.body.id}/decisions`, {
      index: -1,
      allow: true,
      scope: 'session',
    });
    expect(wider.status).toBe(400);
    expect(wider.body.type).toBe('https://islet.dev/problems/validation');
    const answered = await a('POST', `/v1/code-runs/${first.body.id}/decisions`, {
      index: decision.code.index,
      allow: true,
      scope: 'session',
    });
    expect(answered.status).toBe(200);
    expect((await status(first.body.id, 'Completed')).result.value).toBe('send_email');

    // The same session: no decision, the call goes straight out.
    const second = await a('POST', '/v1/runs', run(SEND, { sessionId: 'sess-grant', callId: 'g-2' }), {
      prefer: 'wait=20',
    });
    expect(second.body.status).toBe('Completed');
    expect(second.body.result.value).toBe('send_email');
    expect(deliveriesOf(`${second.body.id}:0`)).toHaveLength(1);

    // Another session of the tenant still asks.
    const third = await a('POST', '/v1/runs', run(SEND, { sessionId: 'sess-other', callId: 'g-3' }));
    const asked = await pendingOf(third.body.id);
    expect(asked.capability.target).toBe(`${mail.id}/send_email`);
    await a('POST', `/v1/code-runs/${third.body.id}/decisions`, { index: asked.code.index, allow: false });
    expect((await status(third.body.id, 'Failed')).result.message).toContain('AppCallDenied');
  });
});
