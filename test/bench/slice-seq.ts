/**
 * EEVDF slice against the one-client path's waits (round 46, `host-slice`): one one-client cluster
 * (share 0.5, as the cluster bench runs it), `WARM` runs, then sides in the order `SIDES` (default
 * off,on,on,off,off,on,on,off: two ABBA cycles on the same processes, so a cluster's start does not
 * weigh on a side) of `RUNS` sequential trivial runs each. "on": the `TARGET` threads ask for a
 * `SLICE_NS` slice (`sched-slice.ts`); "off": the same threads get the kernel's default back
 * (sched_runtime 0; `se.slice` read back and printed each side). TARGET=path (default): the gateway's,
 * Redis's and the runner's main threads (each its own scheduling group here: a group's slice is its
 * shortest queued child's, the one attribute that crosses groups); TARGET=hosts: every thread of every
 * sandbox host (a long slice: SLICE_NS=3000000 or more). Per side: one client's p50 / p99, the stages
 * enqueue → pick-up and end sent → first bytes (p50, mean), and each process's run-delay (schedstat's
 * ns runnable-but-waiting, /proc/<tid>/schedstat) and timeslices a run — counts, no tracer.
 *
 *   flock /work/wt/bench.lock bash scripts/toolchain.sh env RUNS=400 node test/bench/slice-seq.ts
 */
import { readFileSync } from 'node:fs';
import { createRedis, keys } from '@islet/core';
import { pct } from './baselines.ts';
import { benchNow } from './bench-clock.ts';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { clusterThreads } from './cluster-threads.ts';
import { schedstatOf, setSlice, sliceOf } from './sched-slice.ts';
import { stageRow, stagesOf } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 400);
const WARM = Number(process.env.WARM ?? 300);
const SLICE_NS = Number(process.env.SLICE_NS ?? 100_000);
const TARGET = process.env.TARGET ?? 'path';
const SIDES = (process.env.SIDES ?? 'off,on,on,off,off,on,on,off').split(',');

const cluster = await startOneClientCluster('0.5');
const redis = createRedis(cluster.redisUrl);
try {
  const once = stampedRun(cluster, benchNow);
  for (let i = 0; i < WARM; i++) await once();
  // Who is who, read again each side (the engine may replace a host).
  const threads = () => {
    const all = clusterThreads();
    const main = (kind: string) => all.filter((t) => t.kind === kind && t.main).map((t) => t.tid);
    return {
      redis: main('redis'),
      gateway: main('gateway'),
      runner: main('runner'),
      hosts: all.filter((t) => t.kind === 'host').map((t) => t.tid),
      client: [process.pid],
    };
  };
  const f = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : '—');
  console.log(
    `TARGET ${TARGET}, SLICE_NS ${SLICE_NS}, ${RUNS} runs a side, sides ${SIDES.join(' ')}; run-delay µs a run (timeslices a run)`,
  );
  const results: Record<string, number | string>[] = [];
  for (const [n, side] of SIDES.entries()) {
    const t = threads();
    const targets = TARGET === 'hosts' ? t.hosts : [...t.redis, ...t.gateway, ...t.runner];
    setSlice(side === 'on' ? SLICE_NS : 0, targets);
    const slices = [...new Set(targets.map(sliceOf))].join('/');
    const kinds = Object.entries(t) as [string, number[]][];
    const before = new Map(kinds.flatMap(([, tids]) => tids.map((tid) => [tid, schedstatOf(tid)] as const)));
    const lat: number[] = [];
    const rows: { stages: number[]; latencyMs: number }[] = [];
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    const at = new Date().toISOString().slice(11, 19);
    for (let i = 0; i < RUNS; i++) {
      const run = await once();
      lat.push(run.received - run.sent);
      const [createdAt, timings] = await redis.hmget(keys.run(run.id), 'createdAt', 'timings');
      rows.push({
        stages: stageRow(run.sent, run.received, createdAt, timings, run.bytesAt, run.writtenAt),
        latencyMs: run.received - run.sent,
      });
    }
    // Read again: a host made inside the side counts from its start; one gone inside it is lost
    // (its last figures unreadable): \`hosts\` is then low, and says so by its thread count.
    const t2 = threads();
    const s = stagesOf(rows);
    const stage = (prefix: string) => s.stages.find((x) => x.name.trimStart().startsWith(prefix));
    const pick = stage('enqueue → runner pick-up');
    const end = stage("of which end sent → the response's first bytes");
    const delay: Record<string, { wait: number; slices: number }> = {};
    const delays = (Object.entries(t2) as [string, number[]][])
      .map(([k, tids]) => {
        let wait = 0;
        let slices = 0;
        for (const tid of tids) {
          const a = schedstatOf(tid);
          const b = before.get(tid) ?? [0, 0, 0];
          wait += a[1] - b[1];
          slices += a[2] - b[2];
        }
        delay[k] = { wait: wait / RUNS / 1000, slices: slices / RUNS };
        const gone =
          k === 'hosts' ? (t.hosts.filter((x) => !tids.includes(x)).length ? ' [a host gone]' : '') : '';
        return `${k} ${f(wait / RUNS / 1000, 0)} (${f(slices / RUNS, 1)})${gone}`;
      })
      .join(', ');
    results.push({
      side,
      p50: pct(lat, 50),
      p99: pct(lat, 99),
      pick: pick?.p50Ms ?? Number.NaN,
      end: end?.p50Ms ?? Number.NaN,
      redisWait: delay.redis?.wait ?? Number.NaN,
      pathWait: (delay.redis?.wait ?? 0) + (delay.gateway?.wait ?? 0) + (delay.runner?.wait ?? 0),
    });
    console.log(
      `${n + 1} ${side.padEnd(3)} ${at} load ${load} slice ${slices}: one client p50 ${f(pct(lat, 50))} p99 ${f(pct(lat, 99))} ms; ` +
        `pick-up p50 ${f(pick?.p50Ms ?? Number.NaN)} mean ${f(pick?.meanMs ?? Number.NaN)}; end → first bytes p50 ${f(end?.p50Ms ?? Number.NaN)} mean ${f(end?.meanMs ?? Number.NaN)}; ${delays}`,
    );
  }
  // Pairs in order (sides 1–2, 3–4, …): each metric's on − off, and in how many pairs "on" is lower.
  const metrics = ['p50', 'p99', 'pick', 'end', 'redisWait', 'pathWait'];
  console.log('pairs (on − off; ms, run-delay µs a run):');
  for (const m of metrics) {
    const diffs: number[] = [];
    for (let i = 0; i + 1 < results.length; i += 2) {
      const [a, b] = [results[i]!, results[i + 1]!];
      if (a.side === b.side) continue;
      const on = a.side === 'on' ? a : b;
      const off = a.side === 'on' ? b : a;
      diffs.push(Number(on[m]) - Number(off[m]));
    }
    const lower = diffs.filter((d) => d < 0).length;
    console.log(
      `  ${m.padEnd(9)} ${diffs.map((d) => f(d, m.endsWith('Wait') ? 0 : 2)).join(' ')}  on lower in ${lower} of ${diffs.length}`,
    );
  }
} finally {
  redis.disconnect();
  await cluster.stop();
}
