// A real scrape: the local cluster (startCluster: redis-server, a gateway, a runner, as real
// processes) plus the operator (against the fake Kubernetes API), scraped every second by
// Debian's Prometheus with the chart's rule file loaded. A small workload goes through the
// gateway's HTTP API; Prometheus's HTTP API must then show the series moving.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Cluster, startCluster } from '@islet/devstack';
import { type Operator, operatorConfigSchema, startOperator } from '@islet/operator';
import { freePort } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubeApi } from '../../services/operator/test/fake-kube-api.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const RUNS = 6;

let cluster: Cluster;
let api: FakeKubeApi;
let redis: Redis;
let operator: Operator;
let prometheus: ChildProcess | undefined;
let promUrl: string;
let dir: string;
let prometheusLog = '';

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `timed out waiting for ${what}${last ? `: ${String(last)}` : ''}\n${prometheusLog.slice(-2000)}`,
  );
}

async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as {
    status: string;
    data: { result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  if (body.status !== 'success') throw new Error(JSON.stringify(body));
  return body.data.result;
}
const scalar = async (expr: string) => Number((await query(expr))[0]?.value[1] ?? 'NaN');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'islet-prom-'));
  cluster = await startCluster({ gateways: 1, modes: ['read-only'] });
  api = await FakeKubeApi.start({ simulateWorkloads: true });
  redis = new Redis(cluster.redisUrl, { maxRetriesPerRequest: null });
  operator = await startOperator({
    config: operatorConfigSchema.parse({
      ISLET_NAMESPACE: 'islet',
      ISLET_OPERATOR_METRICS_PORT: '0',
      ISLET_OPERATOR_HOST: '127.0.0.1',
      ISLET_OPERATOR_RESYNC_INTERVAL_MS: '500',
      ISLET_OPERATOR_RETRY_PERIOD_MS: '200',
    }),
    kubeConfig: api.kubeConfig(),
    redis,
    log: { info() {}, warn() {}, error() {} },
  });
  api.apply('islet.dev/v1alpha1/runnerpools', 'islet', {
    apiVersion: 'islet.dev/v1alpha1',
    kind: 'RunnerPool',
    metadata: { name: 'islet-read-only', namespace: 'islet' },
    spec: {
      mode: 'read-only',
      minReplicas: 1,
      maxReplicas: 4,
      targetWaitingPerReplica: 2,
      image: 'islet/runner:dev',
    },
  });

  const hostPort = (url: string) => new URL(url).host;
  const promPort = await freePort();
  promUrl = `http://127.0.0.1:${promPort}`;
  const config = {
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    rule_files: [join(ROOT, 'charts/islet/files/alerts/islet-rules.yaml')],
    scrape_configs: [
      { job_name: 'islet-gateway', static_configs: [{ targets: cluster.gatewayUrls.map(hostPort) }] },
      {
        job_name: 'islet-runner',
        static_configs: [{ targets: cluster.runners.map((r) => hostPort(r.url)) }],
      },
      { job_name: 'islet-operator', static_configs: [{ targets: [`127.0.0.1:${operator.metricsPort()}`] }] },
    ],
  };
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config)); // JSON is YAML
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  prometheus.stderr?.on('data', (d: Buffer) => {
    prometheusLog += d.toString();
  });
  await until('prometheus ready', async () => (await fetch(`${promUrl}/-/ready`)).ok);
}, 120_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    await new Promise<void>((r) => {
      prometheus!.once('exit', () => r());
      prometheus!.kill('SIGTERM');
    });
  }
  await operator?.stop();
  redis?.disconnect();
  await api?.stop();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('metrics exposition', () => {
  it('promtool check metrics passes on the gateway’s, the runner’s and the operator’s /metrics', async () => {
    const endpoints = {
      gateway: `${cluster.gatewayUrls[0]}/metrics`,
      runner: `${cluster.runners[0]!.url}/metrics`,
      operator: `http://127.0.0.1:${operator.metricsPort()}/metrics`,
    };
    for (const [component, url] of Object.entries(endpoints)) {
      const text = await (await fetch(url)).text();
      expect(text, component).toContain('# TYPE islet_');
      expect(text, component).toMatch(/^islet_build_info\{version="[^"]+",revision="[^"]+",node="v\d[^"]*"/m);
      const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(r.status, `${component}: ${r.stdout}${r.stderr}`).toBe(0);
    }
  });
});

describe('Prometheus scraping the local cluster', () => {
  it('sees every target up and loads the chart’s rules', async () => {
    await until('all targets up', async () => {
      const up = await query('up');
      return up.length === 3 && up.every((s) => s.value[1] === '1');
    });
    const rules = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
      data: { groups: { name: string; rules: { name: string; health: string }[] }[] };
    };
    const all = rules.data.groups.flatMap((g) => g.rules);
    expect(all.length).toBeGreaterThanOrEqual(17);
    expect(all.map((r) => r.name)).toContain('IsletQueueWaitBudgetBurnFast');
  });

  it('shows runs, queue wait, HTTP requests, runner slots and operator reconciles moving after a workload', async () => {
    const before = await scalar('sum(islet_runs_total{status="Completed"}) or vector(0)');
    const beforeWait = await scalar('sum(islet_queue_wait_seconds_count) or vector(0)');
    for (let i = 0; i < RUNS; i++) {
      const res = await fetch(`${cluster.url}/v1/runs`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${cluster.devKey}`,
          'content-type': 'application/json',
          prefer: 'wait=20',
        },
        body: JSON.stringify({
          code: `console.log("run ${i}"); return ${i} * 2`,
          description: 'scrape test workload',
          sessionId: 'scrape',
          turnId: `turn-${i}`,
          callId: `call-${i}`,
        }),
      });
      const body = (await res.json()) as { status?: string };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.status).toBe('Completed');
    }
    await until('runs counted', async () => {
      const now = await scalar('sum(islet_runs_total{status="Completed"})');
      return now - before >= RUNS;
    });
    const byMode = await query('sum by (mode, kind) (islet_runs_total{status="Completed"})');
    expect(byMode).toContainEqual(expect.objectContaining({ metric: { mode: 'read-only', kind: 'none' } }));
    // Latency by outcome; the gateway's oldest-waiting age, Redis memory and build info on every target.
    await until(
      'run latency by outcome',
      async () =>
        (await scalar(
          'sum(islet_run_duration_seconds_count{status="Completed",kind="none",mode="read-only"})',
        )) >= RUNS,
    );
    expect(await scalar('max(islet_queue_oldest_job_age_seconds{mode="read-only"})')).toBeGreaterThanOrEqual(
      0,
    );
    expect(await scalar('max(islet_redis_used_memory_bytes)')).toBeGreaterThan(0);
    expect((await query('islet_build_info')).map((s) => s.metric.component).sort()).toEqual(
      expect.arrayContaining(['gateway', 'runner']),
    );
    await until(
      'queue waits observed',
      async () => (await scalar('sum(islet_queue_wait_seconds_count)')) - beforeWait >= RUNS,
    );
    await until(
      'http requests counted',
      async () => (await query('islet_http_requests_total{route="/v1/runs",method="POST"}')).length > 0,
    );
    expect((await query('islet_runner_slots{mode="read-only"}')).length).toBeGreaterThan(0);
    await until(
      'operator reconciles',
      async () => (await scalar('sum(islet_operator_reconcile_total{result="ok"})')) > 0,
    );
    expect(
      await scalar('max(islet_operator_desired_replicas{pool="islet-read-only"})'),
    ).toBeGreaterThanOrEqual(1);
    // The recording rules evaluate on real data.
    await until('recording rule', async () => (await query('islet:queue_wait_slow:ratio_rate5m')).length > 0);
  });

  it('evaluates every dashboard query without error, and the main panels show data', async () => {
    const dashboard = JSON.parse(
      readFileSync(join(ROOT, 'charts/islet/files/dashboards/islet.json'), 'utf8'),
    ) as {
      panels: { title: string; type: string; targets?: { expr: string }[] }[];
    };
    const evaluate = async () => {
      const withData = new Set<string>();
      for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
        for (const t of panel.targets ?? []) {
          const expr = t.expr
            .replaceAll('$__rate_interval', '1m')
            .replaceAll('$mode', '.*')
            .replaceAll('$namespace', '.*')
            .replaceAll('$release', '.*');
          const result = await query(expr); // throws on a query error
          if (result.length > 0) withData.add(panel.title);
        }
      }
      return withData;
    };
    const expected = [
      'Runs / s',
      'Throughput by status',
      'Queue wait p99',
      'Run duration percentiles',
      'HTTP requests by code',
      'Queue wait percentiles',
      'Runner saturation (busy slots / all slots)',
      'Desired replicas and scale events',
      'Operator reconciles by result',
      'Oldest queued run age',
      'Run duration p95 by status',
      'Redis memory',
      'Builds running',
    ];
    let withData = new Set<string>();
    // Rates need two scrapes inside their window: give the newest series a few seconds.
    await until(
      'panels with data',
      async () => {
        withData = await evaluate();
        return expected.every((t) => withData.has(t));
      },
      15_000,
    ).catch(() => undefined);
    expect(expected.filter((t) => !withData.has(t))).toEqual([]);
  });

  it('evaluates every alert and recording rule without error', async () => {
    const rules = await until('rules evaluated', async () => {
      const body = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
        data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
      };
      const all = body.data.groups.flatMap((g) => g.rules);
      return all.every((r) => r.health !== 'unknown') ? all : undefined;
    });
    for (const r of rules) expect(r.health, `${r.name}: ${r.lastError ?? ''}`).toBe('ok');
  });
});
