/**
 * The gateway on Redis Cluster: the same HTTP surface (runs, idempotency, sessions and their
 * owners, rate and failed-auth windows, SSE slots, MCP sessions and settings, decisions) run
 * against a real six-node cluster through the Cluster client, and against a slot-checking node
 * through a plain client (any cross-slot MULTI/script/multi-key command fails there with
 * CROSSSLOT). Also the recovery paths of the writes split across the run's and the tenant's slots:
 * a crash between the two halves is simulated by doing only the first, then the recovery loop's in-flight walk runs.
 */
import { createLogger, generateSealKey, type IsletConfig, keys, loadConfig } from '@islet/core';
import {
  type RedisCluster,
  type SlotCheckingRedis,
  startRedisCluster,
  startSlotCheckingRedis,
} from '@islet/testkit';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from './app.ts';
import { createGatewayDeps } from './create-deps.ts';
import { createDecisionsService } from './decisions-service.ts';
import { queueMetricsCollectors } from './queue-metrics-store.ts';
import { createGatewayRecovery } from './run-recovery.ts';
import { createRunsService } from './runs-service.ts';
import { createSseSlots } from './sse-slot-store.ts';

type Deps = Awaited<ReturnType<typeof createGatewayDeps>>;
interface Gateway {
  deps: Deps;
  app: FastifyInstance;
  key: string;
  otherKey: string;
  adminKey: string;
  limitedKey: string;
  submitLimitedKey: string;
  tenant: string;
}

let seq = 0;
const auth = (k: string) => ({ authorization: `Bearer ${k}` });
const runBody = (session: string) => ({
  code: 'return 1',
  description: 'Return the number one',
  sessionId: session,
  turnId: 't1',
  callId: 'c1',
});

async function startGateway(redisEnv: Record<string, string>): Promise<Gateway> {
  const config: IsletConfig = loadConfig({
    ...redisEnv,
    ISLET_SEAL_KEYS: generateSealKey(),
    ISLET_INTERNAL_TOKEN: 'internal-token-for-tests',
    ISLET_AUTH_FAILURES_PER_MINUTE: '3',
    ISLET_REDIS_DURABILITY_CHECK: 'off',
  });
  const deps = await createGatewayDeps(config, createLogger({ name: 'test', level: 'silent' }));
  const app = await buildApp(deps);
  const tenant = `acme-${seq++}`;
  await deps.tenants.createTenant({ id: tenant, name: 'Acme' });
  await deps.tenants.createTenant({ id: `${tenant}-x`, name: 'Other' });
  await deps.tenants.createTenant({ id: `${tenant}-l`, name: 'Limited', rateLimitPerMinute: 2 });
  await deps.tenants.createTenant({ id: `${tenant}-s`, name: 'Submits limited', rateLimitPerMinute: 2 });
  return {
    deps,
    app,
    tenant,
    key: (
      await deps.tenants.createKey(tenant, ['apps.use', 'sessions.read', 'decisions'], { principal: 'ann' })
    ).key,
    otherKey: (await deps.tenants.createKey(tenant, ['apps.use', 'sessions.read'], { principal: 'bob' })).key,
    adminKey: (await deps.tenants.createKey(tenant, ['platform.admin'])).key,
    limitedKey: (await deps.tenants.createKey(`${tenant}-l`, ['apps.use'])).key,
    submitLimitedKey: (await deps.tenants.createKey(`${tenant}-s`, ['apps.use'])).key,
  };
}

/** The gateway's Redis-backed HTTP surface, each step asserting its outcome. */
async function exerciseGateway(g: Gateway): Promise<void> {
  const { app, deps, key } = g;
  const session = `sess-${seq++}`;
  // Submit, idempotent replay, conflicting replay.
  const headers = { ...auth(key), 'idempotency-key': `idem-${seq++}` };
  const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: runBody(session) });
  expect(first.statusCode).toBe(202);
  const id = first.json().id as string;
  const again = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: runBody(session) });
  expect(again.json().id).toBe(id);
  const conflict = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers,
    payload: { ...runBody(session), code: 'return 2' },
  });
  expect(conflict.statusCode).toBe(409);
  expect(await deps.runQueue.queues['read-only'].getJob(id)).toBeTruthy();
  expect(await deps.runs.inFlightCount(g.tenant)).toBe(1);
  // The session is ann's: listed for her; to bob (another principal of the tenant) it does not exist.
  const list = await app.inject({
    method: 'GET',
    url: `/v1/sessions/${session}/code-runs`,
    headers: auth(key),
  });
  expect(list.json().items.map((r: { id: string }) => r.id)).toEqual([id]);
  const bobs = await app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth(g.otherKey),
    payload: runBody(session),
  });
  expect(bobs.statusCode).toBe(404);
  // The run ends; the in-flight entry goes with it.
  const run = await deps.runs.get(id);
  await deps.runs.finish(run!, {
    status: 'Completed',
    result: { _tag: 'Completed', value: 1, logs: [] },
    text: '1',
  });
  expect(await deps.runs.inFlightCount(g.tenant)).toBe(0);
  const done = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
  expect(done.json().status).toBe('Completed');

  // Rate window per tenant, failed-auth window per address: the status of `times` requests in a row.
  const statuses = async (times: number, request: () => InjectOptions) => {
    const out: number[] = [];
    for (let i = 0; i < times; i++) out.push((await app.inject(request())).statusCode);
    return out;
  };
  expect(
    await statuses(4, () => ({ method: 'GET', url: '/v1/connections', headers: auth(g.limitedKey) })),
  ).toEqual([200, 200, 429, 429]);
  // A submit is counted in its admission (the tenant half's script, in the tenant's slot).
  expect(
    await statuses(4, () => ({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(g.submitLimitedKey),
      payload: runBody(`sess-${seq++}`),
    })),
  ).toEqual([202, 202, 429, 429]);
  const prober = `10.9.${seq}.1`;
  expect(
    await statuses(5, () => ({
      method: 'GET',
      url: '/v1/connections',
      headers: auth('isk_wrong'),
      remoteAddress: prober,
    })),
  ).toEqual([401, 401, 401, 429, 429]);

  // SSE stream slots, across replicas: a tenant limit of 2 lets exactly two of five parallel takers in.
  const slots = createSseSlots(deps.redis, { perTenant: 2, perKey: 5 });
  const taken = await Promise.all([...Array(5)].map((_, i) => slots.take(g.tenant, `k${i}`)));
  const held = taken.filter((s) => !('full' in s));
  expect(held).toHaveLength(2);
  for (const s of held) {
    if ('full' in s) continue;
    await s.renew();
    await s.release();
  }
  expect('full' in (await slots.take(g.tenant, 'k0'))).toBe(false);

  // MCP: a session kept in Redis, and the tenant's surface settings.
  const mcpHeaders = {
    ...auth(key),
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const init = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: mcpHeaders,
    payload: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    },
  });
  expect(init.statusCode).toBe(200);
  const mcpSession = String(init.headers['mcp-session-id']);
  expect(await deps.redis.exists(keys.mcpSession(mcpSession))).toBe(1);
  const put = await app.inject({
    method: 'PUT',
    url: `/v1/admin/tenants/${g.tenant}/mcp`,
    headers: auth(g.adminKey),
    payload: { tools: { run_code: { description: 'Run code for Acme' } } },
  });
  expect(put.statusCode).toBe(200);
  const got = await app.inject({
    method: 'GET',
    url: `/v1/admin/tenants/${g.tenant}/mcp`,
    headers: auth(g.adminKey),
  });
  expect(JSON.stringify(got.json())).toContain('Run code for Acme');
}

/** The two recovery paths of a write split across the run's and the tenant's slots. */
async function exerciseRecovery(g: Gateway): Promise<void> {
  const { deps } = g;
  const tenant = g.tenant;
  const runsService = createRunsService(deps);
  const recovery = createGatewayRecovery(deps, runsService, createDecisionsService(deps, runsService), {
    inFlightIntervalMs: 1000,
    graceMs: 60_000,
  });
  const old = Date.now() - 120_000;
  // A create that died after its tenant half (in-flight + session index written, no record):
  // exactly what run-store's CREATE_TENANT writes.
  await deps.redis.zadd(keys.inFlight(tenant), old, 'died-after-tenant-half');
  await deps.redis.zadd(keys.sessionRuns(tenant, 's-crash'), old, 'died-after-tenant-half');
  // The same, but a moment ago: maybe still being created, so left alone.
  await deps.redis.zadd(keys.inFlight(tenant), Date.now(), 'being-created');
  // An end that died after the run's final script, before the in-flight ZREM.
  const r = await g.app.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: auth(g.key),
    payload: runBody('s-end'),
  });
  const endedId = r.json().id as string;
  await deps.runs.finish((await deps.runs.get(endedId))!, {
    status: 'Failed',
    result: { _tag: 'Failed', reason: 'Error', message: 'x', logs: [] },
    text: 'x',
  });
  await deps.redis.zadd(keys.inFlight(tenant), old, endedId);
  expect(await deps.runs.inFlightCount(tenant)).toBe(3);

  await deps.redis.del(keys.orphanSweepLock());
  await recovery.tick();
  expect(await deps.redis.zrange(keys.inFlight(tenant), 0, -1)).toEqual(['being-created']);
  // The session listing skips (and prunes) the id whose record never came.
  const list = await g.app.inject({
    method: 'GET',
    url: '/v1/sessions/s-crash/code-runs',
    headers: auth(g.key),
  });
  expect(list.json().items).toEqual([]);
  expect(await deps.redis.zcard(keys.sessionRuns(tenant, 's-crash'))).toBe(0);
  await deps.redis.zrem(keys.inFlight(tenant), 'being-created');
}

describe('gateway on a slot-checking node (plain client: any cross-slot command fails)', () => {
  let node: SlotCheckingRedis;
  let g: Gateway;
  beforeAll(async () => {
    node = await startSlotCheckingRedis();
    g = await startGateway({ ISLET_REDIS_URL: node.url });
  });
  afterAll(async () => {
    await g?.app.close();
    await g?.deps.close();
    await node?.stop();
  });

  it('runs, idempotency, sessions, rate/auth windows, SSE slots and MCP stay slot-safe', async () => {
    await exerciseGateway(g);
  });

  it('recovery: the in-flight walk repairs in-flight entries a crash between the halves left', async () => {
    await exerciseRecovery(g);
  });
});

describe('gateway on a real Redis Cluster (Cluster client)', () => {
  let cluster: RedisCluster;
  let g: Gateway;
  beforeAll(async () => {
    cluster = await startRedisCluster({ password: 'gw-pass' });
    g = await startGateway({
      ISLET_REDIS_MODE: 'cluster',
      ISLET_REDIS_URL: cluster.seeds,
      ISLET_REDIS_PASSWORD: 'gw-pass',
    });
  }, 60_000);
  afterAll(async () => {
    await g?.app.close();
    await g?.deps.close();
    await cluster?.stop();
  });

  it('runs, idempotency, sessions, rate/auth windows, SSE slots and MCP work across the masters', async () => {
    await exerciseGateway(g);
  });

  it('recovery: the in-flight walk repairs in-flight entries a crash between the halves left', async () => {
    await exerciseRecovery(g);
  });

  it('queue and memory metrics read every master: the fullest one is reported', async () => {
    const collectors = queueMetricsCollectors(g.deps.redis, g.deps.runQueue.queues);
    const masters = await cluster.masters();
    expect(masters).toHaveLength(3);
    const memory = await collectors.readRedisMemory?.();
    expect(memory?.used).toBeGreaterThan(0);
    const depth: Array<[Record<string, string>, number]> = [];
    await collectors.collectQueueDepth?.((labels, n) => depth.push([labels, n]));
    expect(depth.some(([l]) => l.mode === 'read-only')).toBe(true);
  });
});
