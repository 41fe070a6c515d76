/**
 * A rolling restart of the gateways under load, through a load balancer that follows readiness:
 * every request answers (0 failed), every run submitted ends. Each gateway gets SIGTERM (what the
 * kubelet sends), drains (readiness off, keeps serving ISLET_SHUTDOWN_DELAY_MS, then closes after
 * in-flight requests), and is started again before the next one goes.
 */
import { type Cluster, startCluster } from '@islet/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest, sleep, until } from './helpers.ts';
import { type ReadinessProxy, startReadinessProxy } from './readiness-proxy.ts';

let cluster: Cluster;
let proxy: ReadinessProxy;

beforeAll(async () => {
  cluster = await startCluster({
    gateways: 2,
    runners: [{ modes: ['read-only'], concurrency: 8 }],
    env: { ISLET_SHUTDOWN_DELAY_MS: '1500' },
    // Two shared cores, other suites running: a restarted gateway may boot slowly.
    readyTimeoutMs: 120_000,
  });
  proxy = await startReadinessProxy(cluster.gatewayUrls);
}, 300_000);
afterAll(async () => {
  await proxy?.stop();
  await cluster?.stop();
});

describe('gateway rolling restart behind a readiness-following load balancer', () => {
  it('answers every request and loses no run while each gateway is restarted in turn', async () => {
    const failures: string[] = [];
    const ids: string[] = [];
    let requests = 0;
    let stop = false;
    const call = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
      requests++;
      try {
        const res = await fetch(`${proxy.url}${path}`, jsonRequest(cluster.devKey, method, body, headers));
        const text = await res.text();
        if (res.status >= 300) failures.push(`${method} ${path} → ${res.status} ${text.slice(0, 200)}`);
        return res.status < 300 ? JSON.parse(text) : undefined;
      } catch (err) {
        failures.push(`${method} ${path} → ${String(err)}`);
        return undefined;
      }
    };
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const run = await call(
          'POST',
          '/v1/runs',
          {
            code: `return ${w * 10_000 + i}`,
            description: 'Load',
            sessionId: `s${w}`,
            turnId: 't',
            callId: `c${w}-${i}`,
          },
          { prefer: 'wait=2' },
        );
        if (run?.id) {
          ids.push(run.id);
          await call('GET', `/v1/code-runs/${run.id}`);
        }
        // Steady load, not a CPU hog: the restarted gateway must boot on the same two cores.
        await sleep(100);
      }
    };
    const load = Promise.all([0, 1, 2].map(worker));
    await sleep(1000);
    for (const i of [0, 1]) {
      await cluster.killGateway(i, 'SIGTERM'); // resolves when the process has exited
      await cluster.restartGateway(i);
      await until(async () => proxy.ready().includes(cluster.gatewayUrls[i]!), 60_000);
      await sleep(500);
    }
    stop = true;
    await load;
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(50);
    // 0 lost: every run submitted during the roll ends.
    // Polled one run at a time, only the ones not yet seen Completed (the tenant's rate limit).
    const open = new Set(ids);
    const last = new Map<string, string>();
    await until(
      async () => {
        for (const id of [...open]) {
          const r = await fetch(`${proxy.url}/v1/code-runs/${id}`, jsonRequest(cluster.devKey, 'GET'));
          const body = (await r.json()) as { status?: string };
          last.set(id, r.status === 200 ? String(body.status) : `HTTP ${r.status}`);
          if (body.status === 'Completed') open.delete(id);
          if (r.status === 429) break;
        }
        return open.size === 0;
      },
      90_000,
      1000,
    ).catch(() => undefined);
    expect([...open].map((id) => `${id}: ${last.get(id)}`)).toEqual([]);
  }, 400_000);
});
