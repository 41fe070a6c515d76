/**
 * Output while a run runs, and the run index fed by a real runner's end: the run's event stream
 * carries `log` events as the program prints (batched, capped per run by
 * ISLET_LIVE_LOG_MAX_BYTES, one event saying `truncated` past it), they come before `end`, the end
 * record still has the output; `GET /v1/runs` shows the run ended and the day's usage counts it.
 * Real gateway, runner and Redis (the local stack).
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, api, readSse } from './helpers.ts';

let cluster: Cluster;
let a: Api;

const LIVE_MAX_BYTES = 4096;

beforeAll(async () => {
  cluster = await startCluster({
    runners: [{ modes: ['read-only'] }],
    env: {
      ISLET_LIVE_LOG_MAX_BYTES: String(LIVE_MAX_BYTES),
      ISLET_LIVE_LOG_FLUSH_MS: '20',
      ISLET_METRICS_TENANTS: 'dev',
    },
  });
  a = api(cluster.url, cluster.devKey);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

// Prints a line, then spins (the clock inside a run is fixed, so time passes by work) so the
// runner's batches go out while the program still runs.
const printer = (lines: number, width: number) => `
for (let i = 0; i < ${lines}; i++) {
  console.log(String(i).padEnd(${width}, '.'));
  let x = 0;
  for (let j = 0; j < 2e6; j++) x += j;
}
return 'done';`;

describe('live output', () => {
  it('sends log events while the run runs, before its end, and the record keeps the output', async () => {
    const res = await a('POST', '/v1/runs', {
      code: printer(30, 10),
      description: 'Print thirty lines slowly',
      sessionId: 'live-1',
    });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    const events = await readSse(`${cluster.url}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'end',
      timeoutMs: 60_000,
    });
    const logs = events.filter((e) => e.event === 'log');
    const endAt = events.findIndex((e) => e.event === 'end');
    expect(logs.length).toBeGreaterThan(1);
    expect(events.indexOf(logs.at(-1)!)).toBeLessThan(endAt);
    const printed = logs.flatMap((e) => (e.data.lines as Array<{ text: string }>).map((l) => l.text));
    expect(printed).toEqual(Array.from({ length: 30 }, (_, i) => String(i).padEnd(10, '.')));
    expect(logs.every((e) => e.data.attempt === 1)).toBe(true);
    const record = (await a('GET', `/v1/code-runs/${id}`)).body;
    expect(record.status).toBe('Completed');
    expect(record.result.logs).toHaveLength(30);
  });

  it('stops live output at the per-run cap with a truncated event; the end still comes', async () => {
    const res = await a('POST', '/v1/runs', {
      code: printer(200, 100),
      description: 'Print more than the live cap',
      sessionId: 'live-2',
    });
    const id = res.body.id as string;
    const events = await readSse(`${cluster.url}/v1/code-runs/${id}/events`, cluster.devKey, {
      until: (e) => e.event === 'end',
      timeoutMs: 90_000,
    });
    const logs = events.filter((e) => e.event === 'log');
    const bytes = logs
      .flatMap((e) => e.data.lines as Array<{ text: string }>)
      .reduce((n, l) => n + Buffer.byteLength(l.text), 0);
    expect(bytes).toBeLessThanOrEqual(LIVE_MAX_BYTES);
    expect(logs.filter((e) => e.data.truncated === true)).toHaveLength(1);
    expect(events.at(-1)?.event).toBe('end');
    const record = (await a('GET', `/v1/code-runs/${id}`)).body;
    expect(record.result.logs).toHaveLength(200);
  });

  it('lists the ended runs from the index the runner wrote, and counts them in usage and billing metrics', async () => {
    const page = (await a('GET', '/v1/runs?sessionId=live-1')).body;
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({
      status: 'Completed',
      description: 'Print thirty lines slowly',
      kind: 'none',
    });
    expect(page.items[0].endedAt).toBeGreaterThanOrEqual(page.items[0].createdAt);
    // Billing metrics: the listed tenant has its own series; a tenant not listed would be `other`.
    const metrics = await (await fetch(`${cluster.runners[0]!.url}/metrics`)).text();
    expect(metrics).toMatch(/islet_tenant_runs_total\{tenant="dev",status="Completed"[^}]*\} [2-9]/);
    expect(metrics).toMatch(/islet_tenant_output_bytes_total\{tenant="dev"[^}]*\} [1-9]/);
    expect(metrics).not.toMatch(/islet_tenant_runs_total\{tenant="other"/);
    const day = new Date().toISOString().slice(0, 10);
    const usage = (await a('GET', `/v1/usage?from=${day}&to=${day}`)).body;
    const today = usage.items.find((i: { tenant: string }) => i.tenant === 'dev').days[0];
    expect(today.runs.Completed).toBeGreaterThanOrEqual(2);
    expect(today.wallMs).toBeGreaterThan(0);
    const sessions = (await a('GET', '/v1/sessions')).body;
    expect(sessions.items.find((s: { sessionId: string }) => s.sessionId === 'live-2')?.runs).toMatchObject({
      total: 1,
      Completed: 1,
      active: 0,
    });
  });
});
