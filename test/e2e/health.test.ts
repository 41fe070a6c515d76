/**
 * The health series (`GET /v1/health`) fed by a real cluster: run ends count themselves (status,
 * failure kind, latency) in the tenant's hour hash as they end, the gateway's sampler adds the
 * gauges (decisions pending, live runner slots). A tenant key sees its tenant's; a platform admin
 * sees the cluster (every tenant summed) or one tenant. Values are asserted, never timings.
 * Real gateway, runner and Redis (the local stack).
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, type Loose } from './helpers.ts';

let cluster: Cluster;
let admin: Api;
let tenant: Api;
let acme: Api;

const wait = { prefer: 'wait=60' };
const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0);
const lastSampled = (xs: Array<number | null>) => xs.filter((x): x is number => x !== null).at(-1);

beforeAll(async () => {
  cluster = await startCluster({ runners: [{ modes: ['read-only'] }] });
  admin = api(cluster.url, cluster.adminKey);
  const k = await admin('POST', `/v1/admin/tenants/${cluster.tenantId}/keys`, {
    scopes: ['apps.use', 'sessions.read', 'sessions.admin', 'decisions'],
  });
  expect(k.status).toBe(201);
  tenant = api(cluster.url, k.body.key);
  expect((await admin('POST', '/v1/admin/tenants', { id: 'acme', name: 'Acme' })).status).toBe(201);
  const ak = await admin('POST', '/v1/admin/tenants/acme/keys', {
    scopes: ['apps.use', 'sessions.read', 'sessions.admin'],
  });
  acme = api(cluster.url, ak.body.key);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('GET /v1/health', () => {
  it("counts the tenant's ended runs by status, failure kind and latency", async () => {
    for (let i = 0; i < 3; i++) {
      const ok = await tenant(
        'POST',
        '/v1/runs',
        { code: `return ${i}`, description: 'Return a number' },
        wait,
      );
      expect(ok.body.status).toBe('Completed');
    }
    const bad = await tenant(
      'POST',
      '/v1/runs',
      { code: 'throw new Error("boom")', description: 'Throw an error' },
      wait,
    );
    expect(bad.body.status).toBe('Failed');

    const res = await tenant('GET', '/v1/health?minutes=10');
    expect(res.status).toBe(200);
    const h = res.body;
    expect(h).toMatchObject({ scope: 'tenant', tenant: cluster.tenantId, bucketMs: 10_000 });
    expect(h.totals.runs).toEqual({ Completed: 3, Failed: 1 });
    expect(h.totals.failures).toEqual({ exception: 1 });
    expect(sum(h.failures.exception)).toBe(1);
    expect(sum(h.runs.Completed)).toBe(3);
    // Runs per second over 10 s buckets: four runs ended in the window.
    expect(sum(h.runsPerSecond) * 10).toBeCloseTo(4);
    expect(h.totals.p50Ms).toBeGreaterThan(0);
    expect(h.totals.p99Ms).toBeGreaterThanOrEqual(h.totals.p50Ms);
    // Ten minutes of 10 s buckets, every series as long as `t`.
    expect(h.t.length).toBeGreaterThanOrEqual(60);
    for (const series of [h.runsPerSecond, h.p50Ms, h.p99Ms, h.decisionsPending, h.queueDepth.any])
      expect(series).toHaveLength(h.t.length);
    expect(h.p50Ms.filter((v: number | null) => v !== null).length).toBeGreaterThan(0);
  });

  it('shows a platform admin the whole cluster, or one tenant with `tenant`', async () => {
    const ok = await acme('POST', '/v1/runs', { code: 'return "acme"', description: 'Acme run' }, wait);
    expect(ok.body.status).toBe('Completed');
    const own = (await acme('GET', '/v1/health?minutes=10')).body;
    expect(own).toMatchObject({ scope: 'tenant', tenant: 'acme' });
    expect(own.totals.runs).toEqual({ Completed: 1 });

    const all = (await admin('GET', '/v1/health?minutes=10')).body;
    expect(all.scope).toBe('cluster');
    expect(all.totals.runs).toEqual({ Completed: 4, Failed: 1 });
    expect(all.totals.failures).toEqual({ exception: 1 });
    const one = (await admin('GET', '/v1/health?minutes=10&tenant=acme')).body;
    expect(one).toMatchObject({ scope: 'tenant', tenant: 'acme', totals: { runs: { Completed: 1 } } });
  });

  it('samples gauges: a pending decision and the runner slots appear in the series', async () => {
    const waiting = await tenant('POST', '/v1/runs', {
      code: 'return 1',
      description: 'Ask for wider access',
      sandbox_permissions: 'workspace-write',
      justification: 'It writes a report.',
    });
    expect(waiting.status).toBe(202);
    let cluster_: Loose;
    let own: Loose;
    // The sampler writes once per 10 s bucket; poll the mechanism's output, not a clock.
    for (let i = 0; i < 60; i++) {
      cluster_ = (await admin('GET', '/v1/health?minutes=2')).body;
      own = (await tenant('GET', '/v1/health?minutes=2')).body;
      if (lastSampled(cluster_.decisionsPending) && lastSampled(own.decisionsPending)) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    expect(lastSampled(cluster_.decisionsPending)).toBe(1);
    expect(lastSampled(own.decisionsPending)).toBe(1);
    // One runner of read-only registered its slots; nothing queued there.
    expect(lastSampled(cluster_.slotsTotal['read-only'])).toBeGreaterThan(0);
    expect(lastSampled(cluster_.queueDepth['read-only'])).toBe(0);
    // Another tenant's decision is not in acme's series.
    const other = (await acme('GET', '/v1/health?minutes=2')).body;
    expect(lastSampled(other.decisionsPending)).toBe(0);
    await tenant('POST', `/v1/code-runs/${waiting.body.id}/cancel`);
  });

  it("bills the sandbox CPU a busy run used in the day's usage", async () => {
    const day = new Date().toISOString().slice(0, 10);
    const cpu = async () =>
      ((await tenant('GET', `/v1/usage?from=${day}&to=${day}`)).body.items[0].days[0].cpuMs as number) ?? 0;
    const before = await cpu();
    const busy = await tenant(
      'POST',
      '/v1/runs',
      { code: 'let x = 0;\nfor (let i = 0; i < 3e7; i++) x += i % 7;\nreturn x > 0;', description: 'Spin' },
      wait,
    );
    expect(busy.body).toMatchObject({ status: 'Completed', result: { value: true } });
    expect(await cpu()).toBeGreaterThan(before);
  });

  it('refuses bad input with a problem naming the parameter', async () => {
    const zero = await tenant('GET', '/v1/health?minutes=0');
    expect(zero.status).toBe(400);
    expect(zero.headers.get('content-type')).toContain('application/problem+json');
    expect(zero.body).toMatchObject({
      parameter: 'minutes',
      detail: 'query parameter minutes: expected a whole number from 1 to 60',
    });
    const unknown = await tenant('GET', '/v1/health?window=5');
    expect(unknown.status).toBe(400);
    expect(unknown.body.parameter).toBe('window');
    const notAdmin = await tenant('GET', '/v1/health?tenant=acme');
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.body.parameter).toBe('tenant');
    const none = await admin('GET', '/v1/health?tenant=nobody');
    expect(none.status).toBe(404);
    const k = await admin('POST', `/v1/admin/tenants/${cluster.tenantId}/keys`, { scopes: ['apps.use'] });
    const narrow = await api(cluster.url, k.body.key)('GET', '/v1/health');
    expect(narrow.status).toBe(403);
  });
});
