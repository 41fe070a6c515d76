/**
 * Recovery is replay, end to end with real processes: a runner SIGKILLed mid-run, a stalled job
 * (runner frozen past its lock, then thawed), both gateways SIGKILLed between sending a call and
 * journaling it, and Redis SIGKILLed and restarted (AOF). Each run reaches exactly one final
 * status; journaled calls are never resent; an unknown outcome is reported, not resent.
 */
import { keys } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { UNKNOWN_OUTCOME_REASON } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose, sleep, startAppServer, until } from '../e2e/helpers.ts';

let server: RedisServer;
let cluster: Cluster;
let a: Api;
let redis: Redis;
let app: Awaited<ReturnType<typeof startAppServer>>;
let conn: Loose;
/** Gate calls wait here until the test opens them. */
const gates = new Map<string, () => void>();

const CODE = `
const first = await apps.rec.read({ n: 1 });
let gate;
try { gate = (await apps.rec.gate({ n: 2 })).v } catch (e) { gate = e.name + ": " + e.details.reason }
const last = await apps.rec.read({ n: 3 });
return { first: first.v, gate, last: last.v, now: Date.now() };`;

const count = (key: string) => app.deliveries.filter((d) => d.idempotencyKey === key).length;
const submit = async () => {
  const res = await a('POST', '/v1/runs', {
    code: CODE,
    description: 'Read, pass a gate, read again',
    sessionId: 'rec',
    turnId: 't',
    callId: 'c',
    connections: [conn.id],
  });
  expect(res.status).toBe(202);
  return res.body as Loose;
};
const gateReached = (id: string) => until(async () => gates.has(`${id}:1`), 20_000, 20);
const open = (id: string) => gates.get(`${id}:1`)?.();
const ended = (id: string) =>
  until(
    async () => {
      const r = await a('GET', `/v1/code-runs/${id}`).catch(() => undefined);
      return r && ['Completed', 'Failed', 'Cancelled'].includes(r.body?.status) && r.body;
    },
    60_000,
    200,
  );
const endEvents = async (id: string) =>
  (await redis.xrange(keys.runEvents(id), '-', '+')).filter(([, f]) => f[1] === 'end').length;

beforeAll(async () => {
  server = await startRedis({ appendFsync: 'always' });
  redis = new Redis(server.url);
  cluster = await startCluster({
    redisUrl: server.url,
    gateways: 2,
    runners: [
      { modes: ['read-only'], concurrency: 2 },
      { modes: ['read-only'], concurrency: 2 },
    ],
    env: { ISLET_RUNNER_LOCK_DURATION_MS: '2000', ISLET_RUNNER_STALLED_INTERVAL_MS: '1000' },
  });
  a = api(cluster.gatewayUrls[0]!, cluster.devKey);
  app = await startAppServer(async (d) => {
    const args = d.body.arguments ?? {};
    if (d.body.tool === 'gate') await new Promise<void>((resolve) => gates.set(d.idempotencyKey, resolve));
    return { status: 200, body: JSON.stringify({ v: `${d.body.tool}-${args.n}` }) };
  });
  const created = await a('POST', '/v1/connections', {
    name: 'Rec',
    kind: 'http',
    url: app.url,
    tools: [{ name: 'read' }, { name: 'gate' }],
  });
  expect(created.status).toBe(201);
  conn = created.body;
}, 90_000);

afterAll(async () => {
  for (const release of gates.values()) release();
  redis?.disconnect();
  await app?.close();
  await cluster?.stop();
  await server?.stop();
});

const normal = { first: 'read-1', gate: 'gate-2', last: 'read-3' };

describe('recovery is replay', () => {
  it('a runner SIGKILLed mid-run: the run replays, nothing is sent twice', async () => {
    const run = await submit();
    await gateReached(run.id);
    await Promise.all([cluster.killRunner(0), cluster.killRunner(1)]);
    open(run.id); // the gateway journals the gate's outcome although its runner is gone
    await sleep(300);
    await Promise.all([cluster.restartRunner(0), cluster.restartRunner(1)]);
    const done = await ended(run.id);
    expect(done.status).toBe('Completed');
    expect(done.result.value).toEqual({ ...normal, now: run.createdAt });
    for (const i of [0, 1, 2]) expect(count(`${run.id}:${i}`)).toBe(1);
    expect(await endEvents(run.id)).toBe(1);
    expect(Number(await redis.hget(`islet:journal:{${run.id}}`, '#attempt'))).toBeGreaterThanOrEqual(2);
  });

  it('a stalled job (runner frozen past its lock): the newer execution finishes, the thawed one is fenced', async () => {
    await cluster.killRunner(1);
    const run = await submit();
    await gateReached(run.id);
    const frozen = cluster.runners[0]!.pid!;
    process.kill(frozen, 'SIGSTOP');
    try {
      open(run.id);
      await cluster.restartRunner(1);
      const done = await ended(run.id);
      expect(done.status).toBe('Completed');
      expect(done.result.value).toEqual({ ...normal, now: run.createdAt });
    } finally {
      process.kill(frozen, 'SIGCONT');
    }
    await sleep(2500); // the thawed execution goes on, is told it was superseded, and stops
    for (const i of [0, 1, 2]) expect(count(`${run.id}:${i}`)).toBe(1);
    expect(await endEvents(run.id)).toBe(1);
    expect((await a('GET', `/v1/code-runs/${run.id}`)).body.status).toBe('Completed');
  });

  it('gateways SIGKILLed after sending a call, before journaling it: AppCallFailed (unknown), never resent', async () => {
    const run = await submit();
    await gateReached(run.id);
    await Promise.all([cluster.killGateway(0), cluster.killGateway(1)]);
    open(run.id); // the App did the work, but no gateway is alive to journal it
    await Promise.all([cluster.restartGateway(0), cluster.restartGateway(1)]);
    const done = await ended(run.id);
    expect(done.status).toBe('Completed');
    expect(done.result.value).toEqual({
      ...normal,
      gate: `AppCallFailed: ${UNKNOWN_OUTCOME_REASON}`,
      now: run.createdAt,
    });
    expect(done.calls[1].outcome.result.error).toMatchObject({
      name: 'AppCallFailed',
      details: { reason: UNKNOWN_OUTCOME_REASON },
    });
    for (const i of [0, 1, 2]) expect(count(`${run.id}:${i}`)).toBe(1);
    expect(await endEvents(run.id)).toBe(1);
  });

  it('Redis SIGKILLed and restarted mid-run (AOF): the run finishes once, nothing resent', async () => {
    const run = await submit();
    await gateReached(run.id);
    await server.restart();
    open(run.id);
    const done = await ended(run.id);
    expect(done.status).toBe('Completed');
    expect(done.result.value.first).toBe('read-1');
    expect(done.result.value.last).toBe('read-3');
    for (const i of [0, 1, 2]) expect(count(`${run.id}:${i}`)).toBeLessThanOrEqual(1);
    expect(count(`${run.id}:0`) + count(`${run.id}:2`)).toBe(2);
    expect(await endEvents(run.id)).toBe(1);
  });
});
