/**
 * `npm run bench:capacity`: how far one Redis carries Islet and what a 3-master Redis Cluster
 * changes. For each backend (one standalone redis-server; a 3-master + 3-replica Redis Cluster on
 * this machine) and each shape (gateways/runners: 1g/1r, 2g/2r, 2g/4r), a local cluster from
 * `@islet/devstack` on that Redis is driven over HTTP with `Prefer: wait` by several tenants:
 * trivial runs, then runs making BENCH_CALLS sequential binding calls to an instant local App.
 * Per phase: runs/s, p50/p99, and CPU per run of Redis (utime+stime of every redis-server of the
 * backend from /proc, before/after; per node for the cluster, which shows the hot shard), of the
 * gateways and of the runners (with their sandbox hosts).
 *
 * BENCH_SECONDS (default 4) per phase; BENCH_SLOTS runner concurrency (4); BENCH_CALLS (5);
 * BENCH_TENANTS (4); BENCH_SHAPES (e.g. `1x1,2x2,2x4`); BENCH_BACKENDS (`standalone,cluster`);
 * BENCH_FSYNC (`everysec`, both backends alike); BENCH_JSON=<file> writes the figures as JSON.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import type { RedisConfig } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { startRedis, startRedisCluster } from '@islet/testkit';
import { api } from '../e2e/helpers.ts';
import { clusterRedisConfig } from '../e2e/redis-cluster-config.ts';
import { measure, PROGRAM, type Sample } from './baselines.ts';
import { processTree, redisPids, totalCpuMs } from './capacity-cpu.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 4);
const CALLS = Number(process.env.BENCH_CALLS ?? 5);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 4);
const FSYNC = (process.env.BENCH_FSYNC ?? 'everysec') as 'everysec' | 'always';
const SHAPES = (process.env.BENCH_SHAPES ?? '1x1,2x2,2x4').split(',').map((s) => {
  const [g, r] = s.split('x').map(Number);
  if (!(g! >= 1 && r! >= 1)) throw new Error(`BENCH_SHAPES: "${s}" is not <gateways>x<runners>`);
  return { gateways: g!, runners: r! };
});
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'standalone,cluster').split(',');

interface Backend {
  name: string;
  config: RedisConfig;
  ports: number[];
  /** The node serving the read-only mode's queue slot `{runs-read-only}` (cluster only). */
  queuePort?: number;
  masters?: () => Promise<number[]>;
  stop(): Promise<void>;
}

interface Phase {
  sample: Sample;
  /**
   * Redis CPU per run, ms, with the background the stack costs while idle (BullMQ workers' blocking
   * reads and lock checks, fair-share heartbeats, gateways' sweeps and queue metrics; `idleRedisMsPerSec`)
   * taken out: what one more run costs. `redisTotalMs` keeps it in.
   */
  redisTotalMs: number;
  /** Per run, ms of CPU. */
  redisMs: number;
  redisPerNodeMs: Record<string, number>;
  gatewayMs: number;
  runnerMs: number;
}

interface Row {
  backend: string;
  /** Redis CPU per second of wall time with the stack up and no load, ms/s. */
  idleRedisMsPerSec: number;
  /** Cluster: ports of the masters at the end (the other nodes are replicas). */
  masters: number[] | undefined;
  queuePort: number | undefined;
  gateways: number;
  runners: number;
  clients: number;
  trivial: Phase;
  calls: Phase;
  /** Redis CPU per binding call: (call run − trivial run) / calls, ms. */
  redisPerCallMs: number;
}

async function startBackend(name: string): Promise<Backend> {
  if (name === 'standalone') {
    const redis = await startRedis({ appendFsync: FSYNC });
    return { name, config: { ISLET_REDIS_URL: redis.url }, ports: [redis.port], stop: () => redis.stop() };
  }
  if (name === 'cluster') {
    const cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, appendFsync: FSYNC });
    return {
      name: 'cluster (3 masters + 3 replicas)',
      config: clusterRedisConfig(cluster),
      ports: cluster.nodes.map((n) => n.port),
      queuePort: await cluster.masterOf('{runs-read-only}'),
      masters: () => cluster.masters(),
      stop: () => cluster.stop(),
    };
  }
  throw new Error(`BENCH_BACKENDS: unknown "${name}"`);
}

async function measureShape(
  backend: Backend,
  gateways: number,
  runners: number,
  appUrl: string,
): Promise<Row> {
  const cluster = await startCluster({
    redisConfig: backend.config,
    gateways,
    runners: Array.from({ length: runners }, () => ({ modes: ['read-only' as const], concurrency: SLOTS })),
    codeMode: false,
    env: {
      // Several tenants share the pool evenly here; the share and rate limit would measure themselves.
      ISLET_TENANT_POOL_SHARE: '1',
      ISLET_RATE_LIMIT_PER_MINUTE: '10000000',
      ISLET_MAX_IN_FLIGHT_RUNS: '100000',
    },
  });
  try {
    const admin = api(cluster.url, cluster.devKey);
    // Each tenant: a key and an http App; clients rotate over tenants and gateways.
    const tenants: { key: string; conn: string }[] = [];
    for (let t = 0; t < TENANTS; t++) {
      // Fresh tenants per shape: the backend's Redis is shared by the shapes.
      const id = `bench-${gateways}x${runners}-${t}`;
      await admin('POST', '/v1/admin/tenants', { id, name: `Bench ${t}` });
      const key = (await admin('POST', `/v1/admin/tenants/${id}/keys`, { scopes: ['apps.use'] })).body
        .key as string;
      const conn = (
        await api(cluster.url, key)('POST', '/v1/connections', {
          name: 'Bench',
          kind: 'http',
          url: appUrl,
          tools: [{ name: 'ping', policy: 'allow' }],
        })
      ).body.id as string;
      tenants.push({ key, conn });
    }
    let n = 0;
    const submit = async (code: string, withCalls: boolean) => {
      const i = n++;
      const tenant = tenants[i % tenants.length]!;
      const url = cluster.gatewayUrls[i % cluster.gatewayUrls.length]!;
      const res = await api(url, tenant.key)(
        'POST',
        '/v1/runs',
        {
          code,
          description: 'Capacity bench run',
          sessionId: 'bench',
          turnId: 't',
          callId: 'c',
          connections: withCalls ? [tenant.conn] : [],
        },
        { prefer: 'wait=60' },
      );
      if (res.body?.status !== 'Completed')
        throw new Error(`run ended ${res.status} ${JSON.stringify(res.body)}`);
    };
    const redis = redisPids(backend.ports);
    const gatewayPids = cluster.gateways.map((g) => g.pid!);
    const clients = Math.max(8, 2 * runners * SLOTS);
    // The stack's Redis background while no run is submitted (after the set-up settled).
    await new Promise((r) => setTimeout(r, 1000));
    const idleBefore = totalCpuMs([...redis.values()]);
    const idleT0 = performance.now();
    await new Promise((r) => setTimeout(r, 3000));
    const idleRedisMsPerSec =
      (totalCpuMs([...redis.values()]) - idleBefore) / ((performance.now() - idleT0) / 1000);
    const phase = async (code: string, withCalls: boolean): Promise<Phase> => {
      for (let i = 0; i < clients; i++) await submit(code, withCalls); // warm hosts and connections
      const runnerPids = cluster.runners.flatMap((r) => processTree(r.pid!));
      const before = {
        at: performance.now(),
        redis: [...redis].map(([port, pid]) => [port, totalCpuMs([pid])] as const),
        gateway: totalCpuMs(gatewayPids),
        runner: totalCpuMs(runnerPids),
      };
      const sample = await measure(() => submit(code, withCalls), {
        seconds: withCalls ? SECONDS / 2 : SECONDS,
        clients,
        warmup: 0,
        minRuns: clients * 2,
      });
      const elapsedS = (performance.now() - before.at) / 1000;
      const perNode: Record<string, number> = {};
      let redisTotalMs = 0;
      for (const [port, ms] of before.redis) {
        const d = (totalCpuMs([redis.get(port)!]) - ms) / sample.runs;
        perNode[String(port)] = d;
        redisTotalMs += d;
      }
      return {
        sample,
        redisTotalMs,
        redisMs: redisTotalMs - (idleRedisMsPerSec * elapsedS) / sample.runs,
        redisPerNodeMs: perNode,
        gatewayMs: (totalCpuMs(gatewayPids) - before.gateway) / sample.runs,
        runnerMs: (totalCpuMs(runnerPids) - before.runner) / sample.runs,
      };
    };
    const trivial = await phase(PROGRAM, false);
    const calls = await phase(
      `for (let i = 0; i < ${CALLS}; i++) await apps.bench.ping({ i }); return 1`,
      true,
    );
    return {
      idleRedisMsPerSec,
      masters: backend.masters ? await backend.masters() : undefined,
      backend: backend.name,
      queuePort: backend.queuePort,
      gateways,
      runners,
      clients,
      trivial,
      calls,
      redisPerCallMs: (calls.redisMs - trivial.redisMs) / CALLS,
    };
  } finally {
    await cluster.stop();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const app = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appUrl = `http://127.0.0.1:${(app.address() as { port: number }).port}/`;
  const rows: Row[] = [];
  try {
    for (const name of BACKENDS) {
      const backend = await startBackend(name);
      try {
        for (const shape of SHAPES) {
          const row = await measureShape(backend, shape.gateways, shape.runners, appUrl);
          rows.push(row);
          process.stderr.write(
            `${row.backend} ${shape.gateways}g/${shape.runners}r: ${row.trivial.sample.perSec.toFixed(1)} runs/s\n`,
          );
        }
      } finally {
        await backend.stop();
      }
    }
  } finally {
    app.close();
  }
  print(rows, (performance.now() - started) / 1000);
}

function print(rows: Row[], totalSeconds: number): void {
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  console.log(
    `\nIslet capacity bench — node ${process.version}, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}, ${new Date().toISOString()}`,
  );
  console.log(
    `${SECONDS}s per phase, runner slots ${SLOTS}, ${TENANTS} tenants, ${CALLS} binding calls per call run, AOF fsync ${FSYNC}; CPU = utime+stime per run`,
  );
  const head = [
    'backend',
    'shape',
    'clients',
    'runs/s',
    'p50 ms',
    'p99 ms',
    'redis ms',
    '(total)',
    'idle ms/s',
    'gw ms',
    'runner ms',
    `calls runs/s`,
    'p50 ms',
    'redis ms',
    'redis ms/call',
    'vs 1g/1r',
    'vs standalone',
  ];
  const table: string[][] = [head];
  for (const r of rows) {
    const base = rows.find((x) => x.backend === r.backend && x.gateways === 1 && x.runners === 1);
    const standalone = rows.find(
      (x) => x.backend === 'standalone' && x.gateways === r.gateways && x.runners === r.runners,
    );
    table.push([
      r.backend,
      `${r.gateways}g/${r.runners}r`,
      String(r.clients),
      f(r.trivial.sample.perSec),
      f(r.trivial.sample.p50),
      f(r.trivial.sample.p99),
      f(r.trivial.redisMs, 2),
      f(r.trivial.redisTotalMs, 2),
      f(r.idleRedisMsPerSec, 1),
      f(r.trivial.gatewayMs, 2),
      f(r.trivial.runnerMs, 2),
      f(r.calls.sample.perSec),
      f(r.calls.sample.p50),
      f(r.calls.redisMs, 2),
      f(r.redisPerCallMs, 2),
      base ? `${f(r.trivial.sample.perSec / base.trivial.sample.perSec, 2)}x` : '',
      standalone && standalone !== r
        ? `${f(r.trivial.sample.perSec / standalone.trivial.sample.perSec, 2)}x`
        : '',
    ]);
  }
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) console.log(row.map((c, i) => c.padEnd(widths[i]!)).join('  '));
  for (const r of rows.filter((x) => Object.keys(x.trivial.redisPerNodeMs).length > 1)) {
    const nodes = Object.entries(r.trivial.redisPerNodeMs)
      .sort((a, b) => b[1] - a[1])
      .map(
        ([port, ms]) =>
          `${port}${r.masters?.includes(Number(port)) ? ' master' : ' replica'}${Number(port) === r.queuePort ? ' (queue {runs-read-only})' : ''} ${f(ms, 2)}`,
      )
      .join(', ');
    console.log(
      `${r.backend} ${r.gateways}g/${r.runners}r Redis CPU ms per trivial run by node (idle background included): ${nodes}`,
    );
  }
  console.log(`total ${totalSeconds.toFixed(1)} s`);
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(rows, null, 2));
}

await main();
process.exit(0);
