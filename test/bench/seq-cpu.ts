/**
 * `node test/bench/seq-cpu.ts`: the gateway's and the runner's CPU per one-client sequential run
 * (`Prefer: wait`, trivial program, `BENCH_TENANT_SHARE` as `sequential.ts`, default 0.5), the
 * row "one client, sequential" charges to their JavaScript (`CLIENTS`, default 1: that many
 * clients at once instead, e.g. 16 as `cpu-split.ts`). After `WARM` runs (default 1500: V8
 * still compiles hot code through the first thousand) it reads, over `RUNS` (default 1000): each
 * process's main thread's time on a CPU (`/proc/<pid>/schedstat`, ns: the thread a run's path
 * waits for) and the whole process's (`/proc/<pid>/stat`, 10 ms ticks: GC and compiler threads
 * too), and how often each main thread slept and was woken (voluntary context switches: a wake-up
 * costs its thread the scheduler's work, tens of µs on this machine). CPU time does not depend on
 * the wait for a core as latency does, so a change's figure is read at any load (caches colder
 * under load still move it by some %). `PROF=1` also takes `--cpu-prof` profiles of both (`PROF_DIR`; the profiler's own cost is in the figures then) and
 * prints their self time per run over the measured runs only (`profile-summary.ts`; the profile's
 * clock is `process.hrtime`'s). `ALLOC=1` samples the gateway's allocations over the measured runs
 * (`alloc-sampler.ts`, objects already collected included) and prints the bytes a run by site;
 * `ALLOC_CALLERS=next` also prints a site's bytes by its callers (`ALLOC_DEPTH` frames, default 2).
 * `PERF=1` records the gateway's main thread (`PERF_WHO=runner`: the runner's) with `perf record
 * -e cpu-clock` over the measured runs (on-CPU samples only: the V8 profiler's are wall-clock,
 * and charge a thread's time off its CPU to the frame it was in) and prints its time a run by innermost JS frame (a builtin's, V8's or
 * the kernel's time goes to the JS function it ran for; JIT frames are named through
 * `--perf-basic-prof-only-functions`), the data left in `PROF_DIR` for `perf report`. It also
 * prints each process's minor page faults a run: V8's young generation grows to 2 × 64 MB under
 * this load and each page is faulted in at its first use (~10 µs a fault on this VM), which lasts
 * past 1500 warm runs (round 24 `seq-sweep`: ~15 a run, ~230 µs of the gateway's main thread);
 * `WARM=5000` measures after it. `BENCH_NODE_FLAGS` adds Node/V8 flags to both processes.
 * It also prints every process's CPU a run split as the cluster bench's row (gateway, redis,
 * runner + hosts: whole processes, 10 ms ticks), and with `GC_LOG_DIR` set and
 * `BENCH_NODE_FLAGS="--import <abs>/test/bench/gc-log.ts"` the gateway's and the runner's
 * collections a run over the measured runs, by kind, with their time (round 41 `format-cpu`).
 * `BENCH_REDIS=cluster` runs the stack on a 3-master Redis Cluster in cluster mode (round 49).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisCluster } from '@islet/testkit';
import { clusterRedisConfig } from '../e2e/redis-cluster-config.ts';
import { cpuMsOfDescendants } from './baselines.ts';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';
import { allocationCallersOf, summarize, summarizeAllocations, type Window } from './profile-summary.ts';
import { threadCpu as cpu, PERF_HZ, perfNodeFlag, recordThread } from './thread-perf.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
// 1: the sequential path; more: as many concurrent clients (each waiting for its run's end).
const CLIENTS = Number(process.env.CLIENTS ?? 1);
const WARM = Number(process.env.WARM ?? 1500);
const PROF = process.env.PROF === '1';
const ALLOC = process.env.ALLOC === '1';
// ALLOC_WHO=runner samples the runner's allocations instead of the gateway's.
const ALLOC_WHO: 'gateway' | 'runner' = process.env.ALLOC_WHO === 'runner' ? 'runner' : 'gateway';
const PERF = process.env.PERF === '1';
// PERF_JIT=1: V8's jitdump (thread-perf.ts' perfNodeFlag).
const PERF_JIT = PERF && process.env.PERF_JIT === '1';
// PERF_WHO=runner records the runner's main thread instead of the gateway's.
const PERF_WHO: 'gateway' | 'runner' = process.env.PERF_WHO === 'runner' ? 'runner' : 'gateway';
const dir =
  PROF || ALLOC || PERF ? (process.env.PROF_DIR ?? mkdtempSync(join(tmpdir(), 'islet-seq-prof-'))) : '';
if (dir) mkdirSync(dir, { recursive: true });
const options = [
  // BENCH_NODE_FLAGS: V8/Node flags for the gateway and runner (e.g. a young generation's size).
  ...(process.env.BENCH_NODE_FLAGS ? [process.env.BENCH_NODE_FLAGS] : []),
  ...(PROF ? [`--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=100`] : []),
  ...(ALLOC ? [`--import ${join(import.meta.dirname, 'alloc-sampler.ts')}`] : []),
  ...(PERF ? [perfNodeFlag(PERF_JIT)] : []),
];

// BENCH_REDIS=cluster: the stack on a 3-master Redis Cluster (testkit, no replicas, AOF fsync always
// as the stack's own Redis) in cluster mode, in place of its one redis-server (round 49 `cluster-text`).
const redisCluster =
  process.env.BENCH_REDIS === 'cluster'
    ? await startRedisCluster({ masters: 3, replicasPerMaster: 0, appendFsync: 'always' })
    : undefined;
const cluster = await startOneClientCluster(
  '0.5',
  options.length ? { NODE_OPTIONS: options.join(' '), ...(ALLOC ? { BENCH_ALLOC_DIR: dir } : {}) } : {},
  redisCluster ? { redisConfig: clusterRedisConfig(redisCluster) } : {},
);
const pids = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
let line = '';
let window: Window = [0, 0];
let treeLine = '';
let epochWindow: [number, number] = [0, 0];
// The cluster bench's split of its CPU row (cluster-figures.ts): the hosts are the runner's
// children, so "runner + hosts" less the runner's whole process above is the hosts'.
const kindOf = (cmd: string) =>
  cmd.includes('redis-server') ? 'redis' : cmd.includes('gateway/src/main.ts') ? 'gateway' : 'runner + hosts';
try {
  const once = trivialRun(cluster, 'Sequential CPU');
  // WARM_CLIENTS: the warm-up's clients (default CLIENTS); more reach a long-lived gateway's state
  // (past 10,000 runs, say) sooner.
  await burst(once, WARM, Number(process.env.WARM_CLIENTS ?? CLIENTS));
  if (ALLOC && pids[ALLOC_WHO]) process.kill(pids[ALLOC_WHO], 'SIGUSR2');
  const perfPid = pids[PERF_WHO];
  const perf =
    PERF && perfPid
      ? await recordThread({ pid: perfPid, who: PERF_WHO, dir, jit: PERF_JIT, pids: Object.values(pids) })
      : undefined;
  const a = { gateway: cpu(pids.gateway), runner: cpu(pids.runner) };
  const treeA = cpuMsOfDescendants(kindOf);
  const started = Date.now();
  const from = nowUs();
  const fromEpoch = Date.now();
  await burst(once, RUNS, CLIENTS);
  window = [from, nowUs()];
  epochWindow = [fromEpoch, Date.now()];
  const b = { gateway: cpu(pids.gateway), runner: cpu(pids.runner) };
  const treeB = cpuMsOfDescendants(kindOf);
  treeLine = `every process's CPU µs a run (10 ms ticks, all threads and reaped children, as the cluster bench's row): ${Object.entries(
    treeB,
  )
    .map(([k, ms]) => `${k} ${(((ms - (treeA[k] ?? 0)) * 1000) / RUNS).toFixed(0)}`)
    .join(', ')}`;
  if (perf) {
    console.log(
      `=== ${PERF_WHO} (pid ${perfPid}) main thread, perf cpu-clock at ${PERF_HZ} Hz, µs a run by innermost JS frame (self)`,
    );
    console.log(await perf.stop(RUNS, Number(process.env.TOP ?? 40)));
  }
  const allocPid = pids[ALLOC_WHO];
  if (ALLOC && allocPid) {
    process.kill(allocPid, 'SIGUSR2');
    const file = join(dir, `alloc.${allocPid}.heapprofile`);
    for (let i = 0; i < 100 && !readdirSync(dir).includes(`alloc.${allocPid}.heapprofile`); i++)
      await new Promise((r) => setTimeout(r, 100));
    console.log(`=== ${ALLOC_WHO} allocations (${file}), per run over the ${RUNS} measured runs`);
    console.log(summarizeAllocations(file, RUNS, Number(process.env.TOP ?? 40)));
    // ALLOC_CALLERS=next,finish: those sites' bytes by their callers (ALLOC_DEPTH frames, default 2).
    for (const fn of (process.env.ALLOC_CALLERS ?? '').split(',').filter(Boolean))
      console.log(allocationCallersOf(file, fn, RUNS, Number(process.env.ALLOC_DEPTH ?? 2)));
  }
  const per = (who: 'gateway' | 'runner', k: 'main' | 'all' | 'wakes' | 'faults') =>
    ((b[who][k] - a[who][k]) / RUNS).toFixed(k === 'main' || k === 'all' ? 0 : 2);
  line =
    `${RUNS} runs (${CLIENTS} client${CLIENTS > 1 ? 's' : ''}) in ${((Date.now() - started) / 1000).toFixed(1)} s; CPU µs/run, main thread (whole process): ` +
    `gateway ${per('gateway', 'main')} (${per('gateway', 'all')}), runner ${per('runner', 'main')} (${per('runner', 'all')}); ` +
    `main-thread wake-ups a run: gateway ${per('gateway', 'wakes')}, runner ${per('runner', 'wakes')}; ` +
    `minor page faults a run: gateway ${per('gateway', 'faults')}, runner ${per('runner', 'faults')}`;
} finally {
  await cluster.stop();
  await redisCluster?.stop();
}
console.log(line);
console.log(treeLine);
// GC_LOG_DIR (with BENCH_NODE_FLAGS="--import <abs>/test/bench/gc-log.ts"): each process's
// collections over the measured runs, by kind, a run, and their time a run (µs).
if (process.env.GC_LOG_DIR) {
  for (const [who, pid] of Object.entries(pids)) {
    const file = join(process.env.GC_LOG_DIR, `gc-${pid}.jsonl`);
    const byKind: Record<string, { n: number; ms: number }> = {};
    for (const l of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
      const e = JSON.parse(l) as { kind: string; t: number; ms: number };
      if (e.t < epochWindow[0] || e.t > epochWindow[1]) continue;
      const k = byKind[e.kind] ?? { n: 0, ms: 0 };
      byKind[e.kind] = { n: k.n + 1, ms: k.ms + e.ms };
    }
    console.log(
      `${who} GCs a run (count, µs): ${Object.entries(byKind)
        .map(([k, v]) => `${k} ${(v.n / RUNS).toFixed(4)} ${((v.ms * 1000) / RUNS).toFixed(1)}`)
        .join(', ')}`,
    );
  }
}
if (PROF) {
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const who = Object.entries(pids).find(([, pid]) => pid !== undefined && f.includes(`.${pid}.`))?.[0];
    if (!who) continue;
    console.log(`=== ${who} (${join(dir, f)}), per run over the ${RUNS} measured runs`);
    console.log(summarize(join(dir, f), RUNS, Number(process.env.TOP ?? 40), window));
  }
}
