/**
 * The cases cluster.test.ts (one redis-server) and redis-cluster.test.ts (a Redis Cluster) both run
 * against two gateways of one cluster: the same requests and the same assertions, whichever Redis
 * is under them. Each file keeps what only it checks (its Redis's keys, its tenants) around them.
 */
import type { Cluster } from '@islet/devstack';
import { expect } from 'vitest';
import { type Api, api, createConnection, type Loose, readSse, until } from './helpers.ts';

/** Two gateways of one cluster and the submit body a file's runs are made from. */
export interface TwoGateways {
  /** The dev tenant on gateway 0. */
  a: Api;
  /** The dev tenant on gateway 1. */
  b: Api;
  cluster: Cluster;
  /** A submit body: the file's defaults (its session, turn, call id) with `extra` over them. */
  base: (extra?: Record<string, unknown>) => Record<string, unknown>;
}

/** The dev tenant on each of `cluster`'s two gateways, with `base`: the cases' argument. */
export function twoGatewaysOf(cluster: Cluster, base: TwoGateways['base']): TwoGateways {
  return {
    a: api(cluster.gatewayUrls[0]!, cluster.devKey),
    b: api(cluster.gatewayUrls[1]!, cluster.devKey),
    cluster,
    base,
  };
}

/**
 * 12 runs submitted without Prefer, alternately on either gateway: each answered 202 Running at once,
 * all Completed with their own values within `timeoutMs`. Their ids.
 */
export async function expectSpreadRunsComplete(g: TwoGateways, timeoutMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const res = await (i % 2 ? g.a : g.b)(
      'POST',
      '/v1/runs',
      g.base({ code: `return ${i} * 2`, callId: `c-${i}` }),
    );
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('Running');
    ids.push(res.body.id);
  }
  const done = await until(async () => {
    const all = await Promise.all(ids.map((id) => g.a('GET', `/v1/code-runs/${id}`)));
    return all.every((r) => r.body.status === 'Completed') && all;
  }, timeoutMs);
  expect(done.map((r) => r.body.result.value)).toEqual(ids.map((_, i) => i * 2));
  return ids;
}

/** An Idempotency-Key's second submit, on the other gateway, answers the first's run. Its id. */
export async function expectIdempotentAcross(g: TwoGateways): Promise<string> {
  const headers = { 'idempotency-key': `idem-${Date.now()}` };
  const first = await g.a('POST', '/v1/runs', g.base({ code: 'return "once"' }), headers);
  const second = await g.b('POST', '/v1/runs', g.base({ code: 'return "once"' }), headers);
  expect(first.status).toBe(202);
  expect(second.body.id).toBe(first.body.id);
  expect(second.headers.get('idempotent-replayed')).toBe('true');
  return first.body.id;
}

/** Three runs in a new session listed two by two on the other gateway, in order. The session. */
export async function expectSessionPages(g: TwoGateways): Promise<string> {
  const session = `pages-${Date.now()}`;
  for (let i = 0; i < 3; i++) await g.a('POST', '/v1/runs', g.base({ sessionId: session, callId: `p${i}` }));
  const p1 = await g.b('GET', `/v1/sessions/${session}/code-runs?limit=2`);
  expect(p1.body.items.map((r: Loose) => r.callId)).toEqual(['p0', 'p1']);
  const p2 = await g.b('GET', `/v1/sessions/${session}/code-runs?limit=2&cursor=${p1.body.nextCursor}`);
  expect(p2.body.items.map((r: Loose) => r.callId)).toEqual(['p2']);
  expect(p2.body.nextCursor).toBeNull();
  return session;
}

/**
 * A client App's call: it goes out on the run's event stream read on gateway 0; `other` (another
 * tenant) cannot answer it (404), a malformed answer is a 400, the answer through gateway 1 is taken
 * (202) and a second one refused (409); the stream resumed on gateway 1 after the last event seen
 * repeats nothing and runs to the end (the call's event, Completed), the run's value made of the
 * answer, and the whole stream replays from its start for a late reader.
 */
export async function expectClientCallAcross(g: TwoGateways, other: Api): Promise<void> {
  const { a, b, cluster } = g;
  const conn = await createConnection(a, {
    name: 'Phone',
    kind: 'client',
    tools: [{ name: 'ask', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } }],
  });
  const res = await a(
    'POST',
    '/v1/runs',
    g.base({
      code: 'const r = await apps.phone.ask({ q: "name?" }); console.log("got", r.name); return r.name.toUpperCase()',
      connections: [conn.id],
    }),
  );
  const id = res.body.id;
  const url0 = `${cluster.gatewayUrls[0]}/v1/code-runs/${id}/events`;
  const url1 = `${cluster.gatewayUrls[1]}/v1/code-runs/${id}/events`;
  const firstPart = await readSse(url0, cluster.devKey, { until: (e) => e.event === 'call.requested' });
  const requested = firstPart.at(-1)!;
  expect(requested.data).toMatchObject({
    index: 0,
    binding: 'phone.ask',
    arguments: { q: 'name?' },
    idempotencyKey: `${id}:0`,
  });
  expect(
    (await other('POST', `/v1/code-runs/${id}/calls/0/result`, { result: { name: 'eve' } })).status,
  ).toBe(404);
  expect((await b('POST', `/v1/code-runs/${id}/calls/0/result`, { nope: 1 })).status).toBe(400);
  const answered = await b('POST', `/v1/code-runs/${id}/calls/0/result`, { result: { name: 'ada' } });
  expect(answered.status).toBe(202);
  expect((await a('POST', `/v1/code-runs/${id}/calls/0/result`, { result: { name: 'bob' } })).status).toBe(
    409,
  );
  const rest = await readSse(url1, cluster.devKey, {
    lastEventId: requested.id,
    until: (e) => e.event === 'end',
  });
  const seen = new Set(firstPart.map((e) => e.id));
  expect(rest.every((e) => !seen.has(e.id))).toBe(true);
  expect(rest.map((e) => e.event)).toContain('call');
  expect(rest.at(-1)).toMatchObject({ event: 'end', data: { status: 'Completed' } });
  expect((await a('GET', `/v1/code-runs/${id}`)).body.result.value).toBe('ADA');
  const full = await readSse(url1, cluster.devKey, { until: (e) => e.event === 'end' });
  expect(full.map((e) => e.id)).toEqual([...firstPart, ...rest].map((e) => e.id));
}
