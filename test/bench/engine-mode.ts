/**
 * `node test/bench/engine-mode.ts`: what decides the mode of the one-client phase's engine stage
 * ("isolate ready + program + result back"), which the cluster bench reads at ~0.5 ms p50 on one
 * cluster start and 1–2 ms on another. The cluster bench's cluster and order (`PRE=1`: its
 * baselines first, in this process; `WARM` sequential warm-up runs, default 300), then `RUNS`
 * (default 800) sequential runs, each with its stages and, read between runs (no lock needed for
 * the counts): which sandbox host served it (the host whose CPU moved), that host's run count and
 * age, the CPU (`/proc/<pid>/stat` field 39) the runner's and the host's main threads last ran on,
 * their switches and migrations (`/proc/<pid>/sched`), and the run-queue wait of each process's
 * threads (`schedstat`). `CYCLES` (default 1): that many cluster starts in a row.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRedis, keys } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { pct } from './baselines.ts';
import { benchNow } from './bench-clock.ts';
import { leanPost, stampedRun } from './cluster-figures.ts';
import { stageRow } from './stages.ts';
import { clusterPids } from './tail-causes.ts';

const RUNS = Number(process.env.RUNS ?? 800);
const WARM = Number(process.env.WARM ?? 300);
const CYCLES = Number(process.env.CYCLES ?? 1);
const PRE = process.env.PRE === '1';
const ENGINE = 7; // stageRow's index of "engine: isolate ready + program + result back"

interface Proc {
  cpu: number; // ns on CPU, every thread
  wait: number; // ns runnable but waiting for a CPU, every thread
  switches: number; // main thread
  migrations: number; // main thread
  processor: number; // main thread's last CPU
}

function read(pid: number): Proc | undefined {
  try {
    let cpu = 0;
    let wait = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const [c, w] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
        cpu += c ?? 0;
        wait += w ?? 0;
      } catch {
        // thread gone
      }
    }
    const sched = readFileSync(`/proc/${pid}/sched`, 'utf8');
    const field = (f: string) =>
      Number(new RegExp(`^${f}\\s+:\\s+(\\d+)`, 'm').exec(sched)?.[1] ?? Number.NaN);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const processor = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[36]);
    return { cpu, wait, switches: field('nr_switches'), migrations: field('se.nr_migrations'), processor };
  } catch {
    return undefined;
  }
}

interface Row {
  engineMs: number;
  latencyMs: number;
  hostWaitMs: number;
  host: number;
  hostRuns: number;
  hostAgeS: number;
  hosts: number;
  runnerCpu: number;
  hostCpu: number;
  hostQueueUs: number;
  runnerQueueUs: number;
  hostSwitches: number;
  hostMigrations: number;
  runnerMigrations: number;
}

const summary = (rows: Row[], label: string) => {
  if (!rows.length) return `${label}: no runs`;
  const m = (f: (r: Row) => number) => rows.reduce((s, r) => s + f(r), 0) / rows.length;
  const byHost = new Map<number, number>();
  for (const r of rows) byHost.set(r.host, (byHost.get(r.host) ?? 0) + 1);
  return (
    `${label}: ${rows.length} runs, engine p50 ${pct(
      rows.map((r) => r.engineMs),
      50,
    ).toFixed(2)} ms, latency p50 ${pct(
      rows.map((r) => r.latencyMs),
      50,
    ).toFixed(2)}; same CPU ${(m((r) => (r.runnerCpu === r.hostCpu ? 1 : 0)) * 100).toFixed(0)}%, ` +
    `host on cpu0 ${(m((r) => (r.hostCpu === 0 ? 1 : 0)) * 100).toFixed(0)}%, runner on cpu0 ${(m((r) => (r.runnerCpu === 0 ? 1 : 0)) * 100).toFixed(0)}%; ` +
    `host queue ${m((r) => r.hostQueueUs).toFixed(0)} µs, runner queue ${m((r) => r.runnerQueueUs).toFixed(0)} µs; ` +
    `host switches ${m((r) => r.hostSwitches).toFixed(2)}, migrations host ${m((r) => r.hostMigrations).toFixed(2)} runner ${m((r) => r.runnerMigrations).toFixed(2)}; ` +
    `hosts alive ${m((r) => r.hosts).toFixed(2)}; serving host run count ${m((r) => r.hostRuns).toFixed(0)}; ` +
    `host waited ${m((r) => r.hostWaitMs).toFixed(3)} ms; by host ${[...byHost].map(([p, n]) => `${p}:${n}`).join(' ')}`
  );
};

async function pre(): Promise<void> {
  const { engineBaseline, rawIsolateBaseline, spawnBaseline } = await import('./baselines.ts');
  const { messageFloor } = await import('./message-floor.ts');
  await rawIsolateBaseline(3);
  await spawnBaseline(3, 5);
  await engineBaseline(3);
  await messageFloor(300);
}

for (let cycle = 0; cycle < CYCLES; cycle++) {
  if (PRE) await pre();
  const t0 = new Date().toISOString().slice(11, 19);
  const cluster = await startCluster({
    gateways: 1,
    runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
    env: {
      ...(process.env.BENCH_TENANT_SHARE ? { ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE } : {}),
      ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    },
  });
  const redis = createRedis(cluster.redisUrl);
  try {
    const post = leanPost(`${cluster.url}/v1/runs`, cluster.devKey);
    const body = {
      code: 'return 1',
      description: 'w',
      sessionId: 'bench',
      turnId: 't',
      callId: 'c',
      connections: [],
    };
    for (let i = 0; i < WARM; i++) await post(body);
    const stamped = stampedRun(cluster, benchNow);
    const runner = [...clusterPids()].find(([, k]) => k === 'runner')![0];
    // PIN=same: the runner's and the hosts' threads all on CPU 0; PIN=split: the runner on CPU 0,
    // the hosts on CPU 1 (taskset -a -p, after the warm-up; the hosts alive then, none started later).
    if (process.env.PIN) {
      const { execFileSync } = await import('node:child_process');
      execFileSync('taskset', ['-a', '-p', '-c', '0', String(runner)], { stdio: 'ignore' });
      for (const [p, k] of clusterPids())
        if (k === 'host')
          execFileSync('taskset', ['-a', '-p', '-c', process.env.PIN === 'same' ? '0' : '1', String(p)], {
            stdio: 'ignore',
          });
    }
    const born = new Map<number, number>();
    const served = new Map<number, number>();
    const rows: Row[] = [];
    for (let i = 0; i < RUNS; i++) {
      const hostPids = [...clusterPids()].filter(([, k]) => k === 'host').map(([p]) => p);
      for (const p of hostPids) if (!born.has(p)) born.set(p, performance.now());
      const before = new Map(hostPids.map((p) => [p, read(p)]));
      const r0 = read(runner);
      const run = await stamped();
      const r1 = read(runner);
      const after = new Map(hostPids.map((p) => [p, read(p)]));
      let host = -1;
      let most = -1;
      for (const p of hostPids) {
        const a = before.get(p);
        const b = after.get(p);
        if (a && b && b.cpu - a.cpu > most) {
          most = b.cpu - a.cpu;
          host = p;
        }
      }
      served.set(host, (served.get(host) ?? 0) + 1);
      const [createdAt, timings] = await redis.hmget(keys.run(run.id), 'createdAt', 'timings');
      const stages = stageRow(run.sent, run.received, createdAt, timings);
      const ha = before.get(host);
      const hb = after.get(host);
      rows.push({
        engineMs: stages[ENGINE]!,
        latencyMs: run.received - run.sent,
        hostWaitMs: stages[ENGINE - 1]!,
        host,
        hostRuns: served.get(host)!,
        hostAgeS: (performance.now() - (born.get(host) ?? 0)) / 1000,
        hosts: hostPids.length,
        runnerCpu: r1?.processor ?? -1,
        hostCpu: hb?.processor ?? -1,
        hostQueueUs: ha && hb ? (hb.wait - ha.wait) / 1000 : Number.NaN,
        runnerQueueUs: r0 && r1 ? (r1.wait - r0.wait) / 1000 : Number.NaN,
        hostSwitches: ha && hb ? hb.switches - ha.switches : Number.NaN,
        hostMigrations: ha && hb ? hb.migrations - ha.migrations : Number.NaN,
        runnerMigrations: r0 && r1 ? r1.migrations - r0.migrations : Number.NaN,
      });
    }
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    console.log(
      `cycle ${cycle} (${t0}–${new Date().toISOString().slice(11, 19)} UTC, load ${load}, PRE=${PRE ? 1 : 0}, PIN=${process.env.PIN ?? '-'})`,
    );
    console.log(`  ${summary(rows, 'all')}`);
    console.log(`  ${summary(rows.slice(0, RUNS / 2), 'first half')}`);
    console.log(`  ${summary(rows.slice(RUNS / 2), 'second half')}`);
    console.log(
      `  ${summary(
        rows.filter((r) => r.engineMs < 0.7),
        'engine < 0.7 ms',
      )}`,
    );
    console.log(
      `  ${summary(
        rows.filter((r) => r.engineMs >= 0.7),
        'engine ≥ 0.7 ms',
      )}`,
    );
    for (const [p, n] of served) {
      const mine = rows.filter((r) => r.host === p);
      console.log(`  ${summary(mine, `host ${p} (${n} runs)`)}`);
    }
    if (process.env.DUMP) {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(`${process.env.DUMP}.${cycle}.json`, JSON.stringify(rows));
    }
  } finally {
    redis.disconnect();
    await cluster.stop();
  }
}
