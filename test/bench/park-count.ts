/**
 * `node test/bench/park-count.ts` (round 46, `park-timer`): how often a run of parallel binding
 * calls parks, counted, not timed. One gateway, one runner (BENCH_SLOTS, default 4), the fair share
 * at `BENCH_TENANT_SHARE` (default 0.5, as cluster-bench.ts's 100-call row runs it), the ping App.
 * For each size in `SIZES` (default `100,20`): `WARM` (default 10) runs, then `RUNS` (default 30)
 * runs of that many parallel calls, one at a time; Redis's MONITOR counts, inside each run's
 * window, the runner's park releases (lease-release-5: `LEASE_RELEASE` with the pool's slots key
 * first; the runs' own ends carry theirs inside the fused end) and take-backs (`RECLAIM`: three
 * keys, the tenant's deferred set second). `BURN` (default 0) busy processes run meanwhile (the
 * load the counts are taken under; they are stopped at the end): hold the bench lock when BURN > 0,
 * so that nobody's timed run shares the box with them. `PARK_AFTER`: see below.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { createRedis } from '@islet/core';
import { api } from '../e2e/helpers.ts';
import { parallelCalls } from './baselines.ts';
import { leanPost, startOneClientCluster } from './cluster-figures.ts';
import { pingConnection, startPingApp } from './ping-app.ts';

const SIZES = (process.env.SIZES ?? '100,20').split(',').map(Number);
const RUNS = Number(process.env.RUNS ?? 30);
const WARM = Number(process.env.WARM ?? 10);
const BURN = Number(process.env.BURN ?? 0);

const burners: ChildProcess[] = [];
const { app, port } = await startPingApp();
// `PARK_AFTER` (ms): the runner's ISLET_RUNNER_PARK_AFTER_MS (default 100) scaled down, so that a
// quiet box's gaps between answers cross it as a loaded box's cross 100 ms (no busy processes needed).
const cluster = await startOneClientCluster(
  '0.5',
  process.env.PARK_AFTER ? { ISLET_RUNNER_PARK_AFTER_MS: process.env.PARK_AFTER } : {},
);
const redis = createRedis(cluster.redisUrl);
let parks = 0;
let reclaims = 0;
const rows: string[] = [];
try {
  const monitor = await redis.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') return;
    const cmd = (args[0] ?? '').toLowerCase();
    if (cmd !== 'evalsha' && cmd !== 'eval') return;
    const numkeys = Number(args[2]);
    if (numkeys === 5 && (args[3] ?? '').endsWith('}:slots')) parks++;
    else if (numkeys === 3 && (args[4] ?? '').endsWith(':deferred')) reclaims++;
  });
  for (let i = 0; i < BURN; i++)
    burners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  const connection = await pingConnection(api(cluster.url, cluster.devKey), port);
  const post = leanPost(`${cluster.url}/v1/runs`, cluster.devKey);
  for (const calls of SIZES) {
    const code = parallelCalls(calls);
    const run = async () => {
      const body = (await post({
        code,
        description: 'Parallel calls',
        sessionId: 'bench',
        turnId: 't',
        callId: 'c',
        connections: [connection],
      })) as { status?: string };
      if (body?.status !== 'Completed') throw new Error(`run ended ${JSON.stringify(body)}`);
    };
    for (let i = 0; i < WARM; i++) await run();
    const perRun: { parks: number; reclaims: number }[] = [];
    const load = loadavg()[0] ?? 0;
    for (let i = 0; i < RUNS; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const p = parks;
      const r = reclaims;
      await run();
      // MONITOR's lines of the run's own commands arrive after its answer: wait for them.
      await new Promise((res) => setTimeout(res, 20));
      perRun.push({ parks: parks - p, reclaims: reclaims - r });
    }
    const sum = (f: (x: { parks: number; reclaims: number }) => number) =>
      perRun.reduce((a, x) => a + f(x), 0);
    rows.push(
      `| ${calls} | ${new Date().toISOString().slice(11, 19)} | ${load.toFixed(1)}–${(loadavg()[0] ?? 0).toFixed(1)} | ${RUNS} | ` +
        `${perRun.filter((x) => x.parks > 0).length} | ${sum((x) => x.parks)} | ${sum((x) => x.reclaims)} | ` +
        `${Math.max(...perRun.map((x) => x.parks))} |`,
    );
  }
  monitor.disconnect();
} finally {
  for (const b of burners) b.kill('SIGKILL');
  redis.disconnect();
  await cluster.stop();
  app.close();
}
console.log(
  `share ${process.env.BENCH_TENANT_SHARE ?? '0.5'}, park after ${process.env.PARK_AFTER ?? 100} ms, ${BURN} busy processes beside`,
);
console.log(
  '| calls a run | UTC end | load (1 min) | runs | runs that parked | parks (lease releases) | take-backs (RECLAIM) | most parks in a run |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
