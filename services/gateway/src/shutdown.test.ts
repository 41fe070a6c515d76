/**
 * The gateway's listeners as the chart splits them (public / internal / metrics) and its drain on
 * SIGTERM: readiness off at once on every listener, full service during the delay, then long waits
 * end with what they have and in-flight requests finish before the listeners close.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayDepsUnderTest,
  startGatewayDeps,
  type TestGatewayDeps,
} from '../test/gateway-harness.ts';
import { buildApp } from './app.ts';
import { createShutdown } from './shutdown.ts';

let gateway: GatewayDepsUnderTest;
let deps: TestGatewayDeps;
let key: string;
const opened: FastifyInstance[] = [];

beforeAll(async () => {
  gateway = await startGatewayDeps();
  ({ deps } = gateway);
  await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
  key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'])).key;
});
afterAll(async () => {
  for (const a of opened) await a.close();
  await gateway?.close();
});

const build = async (options: Parameters<typeof buildApp>[1]) => {
  const a = await buildApp(deps, options);
  opened.push(a);
  return a;
};

describe('listeners split by port', () => {
  it('public serves neither /internal/* nor /metrics; metrics serves /metrics and health only', async () => {
    const pub = await build({ surface: 'public', metrics: false });
    const metrics = await build({ surface: 'metrics' });
    const internal = await build({ surface: 'internal' });
    const get = (a: FastifyInstance, url: string) =>
      a.inject({ method: 'GET', url }).then((r) => r.statusCode);
    expect(await get(pub, '/metrics')).toBe(404);
    expect(
      await pub.inject({ method: 'POST', url: '/internal/v1/binding-calls' }).then((r) => r.statusCode),
    ).toBe(404);
    expect(await get(pub, '/readyz')).toBe(200);
    const m = await metrics.inject({ method: 'GET', url: '/metrics' });
    expect(m.statusCode).toBe(200);
    expect(m.body).toContain('islet_http_requests_total');
    expect(await get(metrics, '/readyz')).toBe(200);
    expect(await get(metrics, '/v1/code-runs/x')).toBe(404);
    expect(await get(metrics, '/openapi.json')).toBe(200);
    expect(await get(internal, '/metrics')).toBe(404);
    // One port for everything (dev): /metrics stays on it.
    expect(await get(await build({}), '/metrics')).toBe(200);
  });
});

describe('drain on SIGTERM', () => {
  it('readiness fails at once, requests are served during the delay, a long wait ends with 202, then closed', async () => {
    const pub = await build({ surface: 'public', metrics: false });
    const metrics = await build({ surface: 'metrics' });
    let closedDeps = false;
    const shutdown = createShutdown({
      apps: [pub, metrics],
      delayMs: 800,
      logger: { info: () => {}, warn: () => {} } as never,
      afterClose: async () => {
        closedDeps = true;
      },
    });
    await pub.listen({ port: 0, host: '127.0.0.1' });
    await metrics.listen({ port: 0, host: '127.0.0.1' });
    // Each request consumes its body, as a proxy does (an unread body keeps the connection busy).
    const status = async (u: string, init?: RequestInit) => {
      const r = await fetch(u, init);
      await r.text();
      return r.status;
    };
    const url = (a: FastifyInstance) => `http://127.0.0.1:${(a.server.address() as { port: number }).port}`;
    const pubUrl = url(pub);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const body = JSON.stringify({
      code: 'return 1',
      description: 'Wait',
      sessionId: 's',
      turnId: 't',
      callId: 'c',
    });
    // No runner: this Prefer: wait would hold for 60 s (the cap, applied whole: its header says so),
    // past this test's own 60 s limit, so its answer at all proves the drain ended it.
    const waiting = fetch(`${url(pub)}/v1/runs`, {
      method: 'POST',
      headers: { ...headers, prefer: 'wait=60' },
      body,
    }).then(async (r) => {
      await r.text();
      return { status: r.status, applied: r.headers.get('preference-applied') };
    });
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    const done = shutdown.begin('SIGTERM');
    expect(shutdown.draining()).toBe(true);
    expect(await status(`${url(pub)}/readyz`)).toBe(503);
    expect(await status(`${url(metrics)}/readyz`)).toBe(503);
    expect(await status(`${url(pub)}/healthz`)).toBe(200);
    // Still serving real requests during the delay (the load balancer may still send some).
    const during = await status(`${url(pub)}/v1/runs`, {
      method: 'POST',
      headers,
      body: body.replace('"c"', '"c2"'),
    });
    expect(during).toBe(202);
    expect(await status(`${url(metrics)}/metrics`)).toBe(200);
    expect(await waiting).toEqual({ status: 202, applied: 'wait=60' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(700);
    await done;
    expect(closedDeps).toBe(true);
    await expect(fetch(`${pubUrl}/healthz`)).rejects.toThrow();
    // begin() is idempotent (SIGTERM then SIGINT).
    await shutdown.begin('SIGINT');
  });

  it('a request still running at the drain deadline is cut, and the cut is logged at warn', async () => {
    const slow = Fastify();
    opened.push(slow);
    let arrived = false;
    slow.get('/hang', () => {
      arrived = true;
      return new Promise(() => {});
    });
    const warned: string[] = [];
    const shutdown = createShutdown({
      apps: [slow],
      delayMs: 0,
      drainTimeoutMs: 200,
      logger: { info: () => {}, warn: (_: unknown, msg: string) => warned.push(msg) } as never,
      afterClose: async () => {},
    });
    await slow.listen({ port: 0, host: '127.0.0.1' });
    const port = (slow.server.address() as { port: number }).port;
    const hanging = fetch(`http://127.0.0.1:${port}/hang`).then(
      () => 'answered',
      () => 'cut',
    );
    while (!arrived) await new Promise((r) => setTimeout(r, 10));
    await shutdown.begin('SIGTERM');
    expect(await hanging).toBe('cut');
    expect(warned).toEqual(['gateway drain deadline passed: cutting the connections still open']);
  });
});
