/**
 * End to end over HTTP with real processes: two gateways, three runners (two read-only, one
 * workspace-write), their own redis-server. Every run below crosses gateway → BullMQ → runner →
 * sandbox host, and every binding call runner → gateway → App.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { codeRunRecordSchema } from '@islet/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, readSse, sleep, startAppServer, until } from './helpers.ts';
import {
  expectClientCallAcross,
  expectIdempotentAcross,
  expectSessionPages,
  expectSpreadRunsComplete,
  type TwoGateways,
  twoGatewaysOf,
} from './two-gateways.ts';

let cluster: Cluster;
let a: Api; // dev tenant on gateway 0
let b: Api; // dev tenant on gateway 1
let other: Api; // another tenant
let otherKey: string;
let app: Awaited<ReturnType<typeof startAppServer>>;
let g: TwoGateways; // the cases shared with redis-cluster.test.ts

const base = (extra: Record<string, unknown> = {}) => ({
  code: 'return 1',
  description: 'Return the number one',
  sessionId: 'sess-1',
  turnId: 'turn-1',
  callId: 'call-1',
  ...extra,
});

beforeAll(async () => {
  cluster = await startCluster({
    gateways: 2,
    runners: [{ modes: ['read-only'] }, { modes: ['read-only'] }, { modes: ['workspace-write'] }],
    env: {
      ISLET_RUNNER_LOCK_DURATION_MS: '3000',
      ISLET_RUNNER_STALLED_INTERVAL_MS: '1000',
      ISLET_CLIENT_CALL_TIMEOUT_MS: '15000',
      ISLET_APP_CALL_TIMEOUT_MS: '5000',
    },
  });
  g = twoGatewaysOf(cluster, base);
  ({ a, b } = g);
  const t = await a('POST', '/v1/admin/tenants', { id: 'globex', name: 'Globex' });
  expect(t.status).toBe(201);
  const k = await b('POST', '/v1/admin/tenants/globex/keys', {
    scopes: ['apps.use', 'sessions.read', 'decisions'],
  });
  expect(k.status).toBe(201);
  otherKey = k.body.key;
  other = api(cluster.gatewayUrls[1]!, otherKey);
  app = await startAppServer(async (d) => {
    const args = d.body.arguments ?? {};
    if (d.body.tool === 'slow') await sleep(args.ms ?? 300);
    if (d.body.tool === 'broken') return { status: 500, body: '{"error":"boom"}' };
    if (d.body.tool === 'garbled') return { status: 200, body: 'not json' };
    return {
      status: 200,
      body: JSON.stringify({ structuredContent: { tool: d.body.tool, echo: args, key: d.idempotencyKey } }),
    };
  });
}, 90_000);

afterAll(async () => {
  await app?.close();
  await cluster?.stop();
});

/** Submits (on gateway 0, no wait) a program that prints `line` then never ends (60 s deadline). */
const submitSpinning = (line: string) =>
  a('POST', '/v1/runs', base({ code: `console.log("${line}"); for (;;) {}`, timeoutMs: 60_000 }));

async function connection(body: Record<string, unknown>): Promise<Loose> {
  const res = await a('POST', '/v1/connections', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

describe('runs across two gateways and several runners', () => {
  it('submits on one gateway, waits with Prefer, reads on the other', async () => {
    const res = await a('POST', '/v1/runs', base({ code: 'console.info("hi"); return { n: 6 * 7 }' }), {
      prefer: 'wait=20',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('location')).toBe(`/v1/code-runs/${res.body.id}`);
    expect(res.body).toMatchObject({
      session: 'sess-1',
      turn: 'turn-1',
      callId: 'call-1',
      status: 'Completed',
      code: 'console.info("hi"); return { n: 6 * 7 }',
      reason: 'Return the number one',
      calls: [],
      result: { _tag: 'Completed', value: { n: 42 }, logs: [{ level: 'info', text: 'hi' }] },
      text: 'hi\n{"n":42}',
    });
    expect(res.body.createdAt).toBeLessThanOrEqual(res.body.updatedAt);
    const read = await b('GET', `/v1/code-runs/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('without Prefer answers 202 at once; many runs spread over runners and all complete', async () => {
    await expectSpreadRunsComplete(g, 20_000);
  });

  it('maps failures to Code Mode reasons and run_code texts', async () => {
    const thrown = await a(
      'POST',
      '/v1/runs',
      base({ code: 'console.log("before"); throw new Error("nope")' }),
      { prefer: 'wait=20' },
    );
    expect(thrown.body.status).toBe('Failed');
    expect(thrown.body.result).toMatchObject({ _tag: 'Failed', reason: 'Error', kind: 'exception' });
    expect(thrown.body.text).toMatch(
      /^code run failed \(exception\): .*nope[\s\S]*Captured output:\nbefore$/,
    );
    const slow = await b('POST', '/v1/runs', base({ code: 'for (;;) {}', timeoutMs: 300 }), {
      prefer: 'wait=20',
    });
    expect(slow.body.status).toBe('Failed');
    expect(slow.body.result).toMatchObject({ reason: 'Timeout', kind: 'timeout' });
    expect(slow.body.text).toContain('code run failed (timeout)');
    const nothing = await a('POST', '/v1/runs', base({ code: 'const x = 1;' }), { prefer: 'wait=20' });
    expect(nothing.body.text).toBe('(run_code completed with no output)');
  });

  it('an Idempotency-Key returns the same run from any gateway', async () => {
    const first = await expectIdempotentAcross(g);
    const list = await a('GET', '/v1/sessions/sess-1/code-runs?limit=100');
    expect(list.body.items.filter((r: Loose) => r.id === first)).toHaveLength(1);
  });

  it('lists a session page by page', async () => {
    const session = await expectSessionPages(g);
    expect((await other('GET', `/v1/sessions/${session}/code-runs`)).body.items).toEqual([]);
  });

  it('cancels a running program wherever it runs', async () => {
    const res = await submitSpinning('started');
    const id = res.body.id;
    // Wait until a runner picked it up (it reports its attempt), then cancel through the other gateway.
    await readSse(`${cluster.gatewayUrls[0]}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'status' && typeof e.data.attempt === 'number',
    });
    await sleep(300);
    const cancel = await b('POST', `/v1/code-runs/${id}/cancel`);
    expect(cancel.status).toBe(202);
    const ended = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${id}`);
      return r.body.status !== 'Running' && r.body;
    }, 15_000);
    // Ended by the cancel (its reason and text below), not by the program's own end or its limit.
    expect(ended.status).toBe('Cancelled');
    expect(ended.result).toMatchObject({ _tag: 'Failed', reason: 'Cancelled' });
    expect(ended.text).toMatch(/^code run failed \(abort\)/);
    expect((await a('POST', `/v1/code-runs/${id}/cancel`)).status).toBe(409);
  });

  it('settings: a stale expectedVersion gets 409 and every runner applies the current settings', async () => {
    const cur = (await a('GET', '/v1/platform/settings')).body;
    const off = await b('PATCH', '/v1/platform/settings', {
      expectedVersion: cur.version,
      codeMode: { enabled: false },
    });
    expect(off.status).toBe(200);
    const stale = await a('PATCH', '/v1/platform/settings', {
      expectedVersion: cur.version,
      codeMode: { enabled: true },
    });
    expect(stale.status).toBe(409);
    expect(stale.headers.get('content-type')).toContain('application/problem+json');
    expect(stale.body).toMatchObject({
      type: 'https://islet.dev/problems/version-conflict',
      currentVersion: cur.version + 1,
    });
    // The settings govern Code Mode runs (a run_code run is not switched off by them).
    const refused = await a('POST', '/v1/runs', base({ style: 'code-mode' }), { prefer: 'wait=10' });
    expect(refused.body).toMatchObject({ status: 'Failed', result: { reason: 'Unavailable' } });
    const small = await a('PATCH', '/v1/platform/settings', {
      expectedVersion: cur.version + 1,
      codeMode: { enabled: true, outputBytes: 1024 },
    });
    expect(small.status).toBe(200);
    const big = await b('POST', '/v1/runs', base({ style: 'code-mode', code: 'return "x".repeat(5000)' }), {
      prefer: 'wait=20',
    });
    expect(big.body.result).toMatchObject({ reason: 'OutputTooLarge', kind: 'output-limit' });
    const restore = await b('PATCH', '/v1/platform/settings', {
      expectedVersion: cur.version + 2,
      codeMode: cur.codeMode,
    });
    expect(restore.status).toBe(200);
  });
});

describe('connections', () => {
  it('http: parallel calls stay parallel, Idempotency-Key is run:index, deny and failures reach the program', async () => {
    const conn = await connection({
      name: 'Work calendar',
      kind: 'http',
      url: app.url,
      tools: [
        { name: 'slow', inputSchema: { type: 'object' } },
        { name: 'list-events', inputSchema: { type: 'object', properties: { day: { type: 'string' } } } },
        { name: 'delete-all', policy: 'deny' },
        { name: 'broken' },
        { name: 'garbled' },
      ],
    });
    const before = app.deliveries.length;
    const code = `
      const t0 = Date.now();
      const [x, y, z] = await Promise.all([
        apps.work_calendar.slow({ ms: 800 }),
        apps.work_calendar.slow({ ms: 800 }),
        apps.call("work_calendar.slow", { ms: 800 }),
      ]);
      const ev = await apps.work_calendar.list_events({ day: "2026-10-23" });
      const errors = [];
      for (const f of [() => apps.work_calendar.delete_all({}), () => apps.work_calendar.broken({}), () => apps.work_calendar.garbled({})]) {
        try { await f(); } catch (e) { errors.push({ name: e.name, reason: e.details?.reason ?? null }); }
      }
      return { keys: [x, y, z].map((r) => r.structuredContent.key), day: ev.structuredContent.echo.day, errors };
    `;
    const res = await a('POST', '/v1/runs', base({ code, connections: [conn.id] }), { prefer: 'wait=30' });
    expect(res.body.status, JSON.stringify(res.body)).toBe('Completed');
    const id = res.body.id;
    expect(res.body.result.value.keys).toEqual([`${id}:0`, `${id}:1`, `${id}:2`]);
    expect(res.body.result.value.day).toBe('2026-10-23');
    expect(res.body.result.value.errors).toEqual([
      { name: 'AppCallDenied', reason: null },
      { name: 'AppCallFailed', reason: 'http-status' },
      { name: 'AppCallFailed', reason: 'bad-json' },
    ]);
    // Three slow calls overlapped at the App: parallel end to end.
    expect(app.maxInFlight()).toBeGreaterThanOrEqual(3);
    const mine = app.deliveries.slice(before);
    expect(mine.map((d) => d.idempotencyKey).sort()).toEqual(
      [0, 1, 2, 3, 5, 6].map((i) => `${id}:${i}`).sort(),
    );
    // The record lists every call with its source, operation id and outcome.
    const calls = res.body.calls;
    expect(calls).toHaveLength(7);
    expect(calls[3]).toMatchObject({
      index: 3,
      binding: 'work_calendar.list_events',
      source: { connectionId: conn.id, connectionName: 'Work calendar', name: 'list-events', kind: 'tool' },
      outcome: {
        _tag: 'Done',
        result: { _tag: 'Completed', value: { structuredContent: { tool: 'list-events' } } },
      },
    });
    expect(calls[4].outcome).toMatchObject({
      _tag: 'Done',
      result: { _tag: 'Failed', error: { name: 'AppCallDenied' } },
    });
    expect(typeof calls[0].operationId).toBe('string');
    // The record is exactly the protocol's Code Mode shape.
    expect(() => codeRunRecordSchema.strict().parse(res.body)).not.toThrow();
    // Arguments and results are sealed at rest: no plaintext of them in Redis.
    const { createRedis } = await import('@islet/core');
    const redis = createRedis(cluster.redisUrl);
    const dump = JSON.stringify(await redis.hgetall(`islet:run:{${id}}`));
    redis.disconnect();
    expect(dump).not.toContain('2026-10-23');
    expect(dump).not.toContain('apps.work_calendar');
  });

  it('client: the call goes out on the event stream and is answered through the other gateway; SSE resumes with Last-Event-ID', async () => {
    await expectClientCallAcross(g, other);
  });

  it('ask: the run waits for a decision and says so on its stream', async () => {
    const conn = await connection({
      name: 'Mail',
      kind: 'http',
      url: app.url,
      tools: [{ name: 'send', policy: 'ask' }],
    });
    const before = app.deliveries.length;
    const res = await a(
      'POST',
      '/v1/runs',
      base({
        code: 'await apps.mail.send({ to: "team@example.com" }); return "sent"',
        connections: [conn.id],
        callId: 'call-9',
      }),
      { prefer: 'wait=60' },
    );
    // Prefer: wait answers as soon as the run waits for a decision: a gateway that held the full
    // 60 s (the cap) would run this test past its own 60 s limit.
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('Waiting');
    const events = await readSse(
      `${cluster.gatewayUrls[1]}/v1/code-runs/${res.body.id}/events`,
      cluster.devKey,
      {
        until: (e) => e.event === 'decision.needed',
      },
    );
    expect(events.at(-1)!.data).toMatchObject({
      capability: { action: 'apps.call', target: `${conn.id}/send` },
      toolCallId: 'call-9',
      app: { callId: 'call-9:0', arguments: { to: 'team@example.com' } },
      code: { run: res.body.id, index: 0 },
    });
    const rec = await until(async () => {
      const r = await b('GET', `/v1/code-runs/${res.body.id}`);
      return r.body.status === 'Waiting' && r.body;
    });
    expect(rec.status).toBe('Waiting');
    expect(app.deliveries.length).toBe(before);
    // Cancel while waiting ends it.
    expect((await a('POST', `/v1/code-runs/${res.body.id}/cancel`)).body.status).toBe('Cancelled');
  });
});

describe('metrics', () => {
  it('gateways and runners expose the agreed metric names without run or tenant labels', async () => {
    const gw = await (await fetch(`${cluster.gatewayUrls[0]}/metrics`)).text();
    for (const name of [
      'islet_http_requests_total{',
      'islet_binding_calls_total{outcome="result"',
      'islet_queue_depth{mode="read-only",state="waiting"',
      'islet_process_cpu_seconds_total',
    ])
      expect(gw).toContain(name);
    const runners = await Promise.all(
      cluster.runners.map(async (r) => (await fetch(`${r.url}/metrics`)).text()),
    );
    const all = runners.join('\n');
    expect(all).toMatch(/islet_runs_total\{status="Completed",kind="none",mode="read-only"[^}]*\} \d+/);
    expect(all).toContain('islet_runs_total{status="Failed",kind="exception",mode="read-only"');
    expect(all).toContain('islet_run_duration_seconds_bucket{');
    expect(all).toContain('islet_queue_wait_seconds_bucket{');
    expect(all).toContain('islet_runner_slots{mode="read-only",state="busy"');
    expect(all).toContain('islet_sandbox_enforcement{mode="read-only"');
    const series = `${gw}\n${all}`.split('\n').filter((line) => !line.startsWith('#'));
    expect(series.filter((line) => /run(_?id)?="/.test(line))).toEqual([]);
    // Only the billing counters carry a tenant, and bounded: a tenant an operator lists in
    // ISLET_METRICS_TENANTS by name (none here), every other one as "other".
    const byTenant = series.filter((line) => /tenant(_?id)?="/.test(line));
    expect(byTenant.length).toBeGreaterThan(0);
    for (const line of byTenant) expect(line).toMatch(/^islet_tenant_\w+\{(?:[^}]*,)?tenant="other"[,}]/);
  });
});

describe('tenant walls', () => {
  it('the runner channel is not on the public port, and needs the internal token on its own', async () => {
    const call = { attempt: 1, index: 0, binding: 'x.y', argsJson: '{}' };
    const headers = {
      authorization: `Bearer ${cluster.env.ISLET_INTERNAL_TOKEN}`,
      'content-type': 'application/json',
    };
    const pub = await fetch(`${cluster.gatewayUrls[0]}/internal/v1/code-runs/nope/calls`, {
      method: 'POST',
      headers,
      body: JSON.stringify(call),
    });
    expect(pub.status).toBe(404);
    const internal = cluster.gateways[0]!.internalUrl!;
    const noToken = await fetch(`${internal}/internal/v1/code-runs/nope/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${cluster.devKey}` },
      body: JSON.stringify(call),
    });
    expect(noToken.status).toBe(401);
    const ok = await fetch(`${internal}/internal/v1/code-runs/nope/calls`, {
      method: 'POST',
      headers,
      body: JSON.stringify(call),
    });
    expect(ok.status).toBe(404); // authenticated; the run does not exist
    expect(
      (await fetch(`${internal}/v1/connections`, { headers: { authorization: `Bearer ${cluster.devKey}` } }))
        .status,
    ).toBe(404);
  });

  it('another tenant gets 404 on every route of a run and a connection', async () => {
    const conn = await connection({ name: 'Walled', kind: 'client', tools: [{ name: 't' }] });
    const run = await a('POST', '/v1/runs', base({ code: 'return 5' }), { prefer: 'wait=20' });
    const id = run.body.id;
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/v1/code-runs/${id}`],
      ['GET', `/v1/code-runs/${id}/events`],
      ['POST', `/v1/code-runs/${id}/cancel`],
      ['POST', `/v1/code-runs/${id}/calls/0/result`, { result: 1 }],
      ['GET', `/v1/connections/${conn.id}`],
      ['DELETE', `/v1/connections/${conn.id}`],
    ];
    for (const [m, p, body] of attempts) {
      const r = await other(m, p, body);
      expect(r.status, `${m} ${p}`).toBe(404);
      expect(r.body.type).toBe('https://islet.dev/problems/not-found');
    }
    const submit = await other('POST', '/v1/runs', base({ connections: [conn.id] }));
    expect(submit.status).toBe(400);
    expect(submit.body.detail).toBe(`unknown connection: ${conn.id}`);
    expect((await other('GET', '/v1/sessions/sess-1/code-runs')).body.items).toEqual([]);
    expect((await other('GET', '/v1/connections')).body.items).toEqual([]);
    // Only the built-in files.* bindings: none of the first tenant's connections.
    expect(
      (await other('GET', '/v1/code-api')).body.bindings.map((b: { binding: string }) => b.binding),
    ).toEqual(['files.read', 'files.write', 'files.list', 'files.remove']);
    // platform.admin is needed for settings and tenants.
    expect((await other('PATCH', '/v1/platform/settings', { expectedVersion: 1, codeMode: {} })).status).toBe(
      403,
    );
    expect((await other('POST', '/v1/admin/tenants', { name: 'x' })).status).toBe(403);
    // The run is still there for its owner.
    expect((await a('GET', `/v1/code-runs/${id}`)).status).toBe(200);
  });
});

describe('recovery', () => {
  it('a runner SIGKILLed mid-run: the job is picked up again, the App call is not resent, the run completes', async () => {
    const conn = await connection({ name: 'Crashy', kind: 'http', url: app.url, tools: [{ name: 'slow' }] });
    const code = 'const r = await apps.crashy.slow({ ms: 1500 }); return r.structuredContent.key';
    const res = await a('POST', '/v1/runs', base({ code, connections: [conn.id] }));
    const id = res.body.id;
    await until(async () => app.deliveries.some((d) => d.idempotencyKey === `${id}:0`), 15_000, 20);
    // Kill every read-only runner while the App call is in flight, then bring them back.
    await Promise.all([cluster.killRunner(0, 'SIGKILL'), cluster.killRunner(1, 'SIGKILL')]);
    await Promise.all([cluster.restartRunner(0), cluster.restartRunner(1)]);
    const ended = await until(
      async () => {
        const r = await b('GET', `/v1/code-runs/${id}`);
        return ['Completed', 'Failed', 'Cancelled'].includes(r.body.status) && r.body;
      },
      40_000,
      200,
    );
    expect(ended.status, JSON.stringify(ended)).toBe('Completed');
    expect(ended.result.value).toBe(`${id}:0`);
    expect(app.deliveries.filter((d) => d.idempotencyKey === `${id}:0`)).toHaveLength(1);
    // Metrics of a surviving process still count runs.
    const metrics = await (await fetch(`${cluster.runners[2]!.url}/metrics`)).text();
    expect(metrics).toContain('islet_runner_slots{mode="workspace-write",state="idle"');
  }, 60_000);

  it('SIGTERM drains: a runner told to stop finishes the run it holds before it exits', async () => {
    const conn = await connection({ name: 'Drain', kind: 'http', url: app.url, tools: [{ name: 'slow' }] });
    const res = await a(
      'POST',
      '/v1/runs',
      base({
        code: 'const r = await apps.drain.slow({ ms: 1200 }); return "drained"',
        connections: [conn.id],
      }),
    );
    const id = res.body.id;
    await until(async () => app.deliveries.some((d) => d.idempotencyKey === `${id}:0`), 15_000, 20);
    await Promise.all([cluster.killRunner(0, 'SIGTERM'), cluster.killRunner(1, 'SIGTERM')]);
    // Both runners have exited; the run finished before they did.
    const rec = await a('GET', `/v1/code-runs/${id}`);
    expect(rec.body.status).toBe('Completed');
    expect(rec.body.result.value).toBe('drained');
    await Promise.all([cluster.restartRunner(0), cluster.restartRunner(1)]);
  }, 60_000);

  it('survives a Redis restart: gateways and runners reconnect and runs go on', async () => {
    const before = await a('POST', '/v1/runs', base({ code: 'return "before"' }), { prefer: 'wait=20' });
    expect(before.body.status).toBe('Completed');
    await sleep(1200); // appendfsync everysec
    await cluster.redis!.restart();
    const after = await until(
      async () => {
        const r = await b('POST', '/v1/runs', base({ code: 'return "after"' }), { prefer: 'wait=20' });
        return r.status < 500 && r.body.status === 'Completed' && r;
      },
      30_000,
      500,
    );
    expect(after.body.result.value).toBe('after');
    // Records written before the restart are still there (AOF).
    expect((await b('GET', `/v1/code-runs/${before.body.id}`)).body.result.value).toBe('before');
  }, 60_000);

  it('a gateway told to stop ends its open event streams at once; the stream resumes on its replacement', async () => {
    const res = await submitSpinning('spinning');
    const id = res.body.id;
    const url = `${cluster.gatewayUrls[1]}/v1/code-runs/${id}/events`;
    const seen: string[] = [];
    const reading = readSse(url, cluster.devKey, { timeoutMs: 30_000, onEvent: (e) => seen.push(e.id) });
    await until(async () => seen.length > 0, 10_000, 20);
    await cluster.killGateway(1, 'SIGTERM');
    // It closed by itself (exit 0 after its drain), not SIGKILLed at the 10 s grace: a stream still
    // open would have held its listener's close to the 30 s drain deadline.
    expect(cluster.gateways[1]!.exit).toEqual({ code: 0, signal: null });
    await reading; // the stream ended with the gateway
    await cluster.restartGateway(1);
    const cancel = await a('POST', `/v1/code-runs/${id}/cancel`);
    expect(cancel.status).toBe(202);
    const rest = await readSse(url, cluster.devKey, {
      lastEventId: seen.at(-1)!,
      until: (e) => e.event === 'end',
    });
    expect(rest.every((e) => !seen.includes(e.id))).toBe(true);
    expect(rest.at(-1)).toMatchObject({ event: 'end', data: { status: 'Cancelled' } });
  }, 60_000);
});
