/**
 * `node test/bench/par-cpu.ts`: the bill of a run's `CALLS` (default 100) parallel binding calls
 * (one `Promise.all` to an instant loopback App in this process), by count and by CPU, for the row
 * "100 parallel binding calls in one run". After `WARM` runs (default 150) it reads, over `RUNS`
 * (default 100) runs one after another: the gateway's and the runner's main-thread CPU a call
 * (`/proc/<pid>/task/<pid>/schedstat`: time on a CPU, not time waiting for one, so it reads at any
 * load) and whole-process CPU a call, their main threads' wake-ups a run, Redis commands a run
 * (`INFO commandstats`: `evalsha` is the script calls, the commands inside are counted too), and the
 * App's side: requests and new connections a run, connections in all. `PERF=1` records
 * the gateway's main thread (`PERF_WHO=runner`: the runner's) with `perf record -e cpu-clock` over
 * the measured runs and prints its on-CPU time a call by innermost JS frame (`PERF_JIT=1`: V8's
 * jitdump, see seq-cpu.ts), then the same samples by whose code they are (perf-owners.ts). Also
 * each process's minor page faults a run. And (round 46, `par-calls`) every process's CPU a run on
 * the 2-core box: the gateway's and the runner's whole processes, the runner's children (the sandbox
 * hosts and their jails, `/proc/<pid>/stat`; a host replaced during the runs loses its part), Redis
 * (INFO cpu) and this process (the App and the bench's client), their sum, and the sum ÷ 2: the
 * least wall time a run can take with all of them sharing 2 CPUs; and the gateway's CPU by thread name
 * (`MainThread`, `V8Worker`: V8's GC and compiler threads). `BENCH_NODE_FLAGS` adds Node/V8 flags
 * to the gateway and the runner; with `GC_LOG_DIR` set and `BENCH_NODE_FLAGS="--import
 * <abs>/test/bench/gc-log.ts"`, their collections a run over the measured runs, by kind, with their
 * time (as seq-cpu.ts). `ALLOC=1` samples the gateway's allocations (`ALLOC_WHO=runner`: the
 * runner's) over the measured runs with alloc-sampler.ts and prints the bytes a call by site.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { processTree } from './capacity-cpu.ts';
import { commandStats, startOneClientCluster } from './cluster-figures.ts';
import { parallelCallRun } from './parallel-run.ts';
import { perfOwners } from './perf-owners.ts';
import { summarizeAllocations } from './profile-summary.ts';
import { threadCpu as cpu, PERF_HZ, perfNodeFlag, recordThread } from './thread-perf.ts';

const CALLS = Number(process.env.CALLS ?? 100);
const WARM = Number(process.env.WARM ?? 150);
const RUNS = Number(process.env.RUNS ?? 100);
const PERF = process.env.PERF === '1';
const PERF_JIT = PERF && process.env.PERF_JIT === '1';
const PERF_WHO: 'gateway' | 'runner' = process.env.PERF_WHO === 'runner' ? 'runner' : 'gateway';
const ALLOC = process.env.ALLOC === '1';
const ALLOC_WHO: 'gateway' | 'runner' = process.env.ALLOC_WHO === 'runner' ? 'runner' : 'gateway';
const dir = PERF || ALLOC ? (process.env.PROF_DIR ?? mkdtempSync(join(tmpdir(), 'islet-par-prof-'))) : '';
if (dir) mkdirSync(dir, { recursive: true });

// The App: counts its requests and new connections (a call that waited for a free connection
// would show as fewer connections than calls in flight, or as new ones a run).
const app = { requests: 0, connections: 0 };
const server = createServer((req, res) => {
  app.requests++;
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});
server.on('connection', () => app.connections++);
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as { port: number }).port;

const nodeOptions = [
  ...(process.env.BENCH_NODE_FLAGS ? [process.env.BENCH_NODE_FLAGS] : []),
  ...(PERF ? [perfNodeFlag(PERF_JIT)] : []),
  ...(ALLOC ? [`--import ${join(import.meta.dirname, 'alloc-sampler.ts')}`] : []),
];
const cluster = await startOneClientCluster(
  '1',
  nodeOptions.length
    ? { NODE_OPTIONS: nodeOptions.join(' '), ...(ALLOC ? { BENCH_ALLOC_DIR: dir } : {}) }
    : {},
);
const pids = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };
const redis = createRedis(cluster.redisUrl);

/** Redis's CPU, µs (INFO cpu: user + sys), and its time inside script calls, µs (round 44 `outcome-script`). */
function redisCpu(cpuInfo: string, stats: string): { cpu: number; scripts: number } {
  const field = (name: string) => Number(cpuInfo.match(new RegExp(`^${name}:([\\d.]+)`, 'm'))?.[1] ?? 0);
  let scripts = 0;
  for (const m of stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=\d+,usec=(\d+)/gm)) scripts += Number(m[1]);
  return { cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, scripts };
}

/** µs of CPU (user + sys) by pid of the runner's children: its sandbox hosts and their jails. */
function childrenCpu(runner: number | undefined): Map<number, number> {
  const out = new Map<number, number>();
  if (runner === undefined) return out;
  for (const pid of processTree(runner).slice(1)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(pid, (Number(f[11]) + Number(f[12])) * 10_000);
    } catch {
      // gone
    }
  }
  return out;
}

/** µs on a CPU by thread name (`/proc/<pid>/task/<tid>/comm`, schedstat), summed over threads of a name. */
function threadsCpu(pid: number | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (pid === undefined) return out;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const us = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
      out.set(name, (out.get(name) ?? 0) + us);
    } catch {
      // gone
    }
  }
  return out;
}

/** The measured runs' start and end, ms since the epoch (the GC log's clock). */
const epochWindow = [0, 0];
let out = '';
try {
  const run = await parallelCallRun(cluster, port, CALLS, 'Parallel calls CPU');
  for (let i = 0; i < WARM; i++) await run();
  const perfPid = pids[PERF_WHO];
  const perf =
    PERF && perfPid
      ? await recordThread({ pid: perfPid, who: PERF_WHO, dir, jit: PERF_JIT, pids: Object.values(pids) })
      : undefined;
  const app0 = { ...app };
  const r0 = commandStats(await redis.info('commandstats'));
  const rc0 = redisCpu(await redis.info('cpu'), await redis.info('commandstats'));
  const a = { gateway: cpu(pids.gateway), runner: cpu(pids.runner) };
  const hosts0 = childrenCpu(pids.runner);
  const gwThreads0 = threadsCpu(pids.gateway);
  const self0 = process.cpuUsage();
  const allocPid = ALLOC ? pids[ALLOC_WHO] : undefined;
  if (allocPid) process.kill(allocPid, 'SIGUSR2');
  const started = performance.now();
  epochWindow[0] = performance.timeOrigin + started;
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await run();
    ms.push(performance.now() - t);
  }
  const wall = performance.now() - started;
  epochWindow[1] = performance.timeOrigin + performance.now();
  const b = { gateway: cpu(pids.gateway), runner: cpu(pids.runner) };
  const self1 = process.cpuUsage(self0);
  if (allocPid) {
    process.kill(allocPid, 'SIGUSR2');
    const name = `alloc.${allocPid}.heapprofile`;
    for (let i = 0; i < 100 && !readdirSync(dir).includes(name); i++)
      await new Promise((r) => setTimeout(r, 100));
    const exactName = `alloc.${allocPid}.exact`;
    if (readdirSync(dir).includes(exactName)) {
      // Counted, not sampled (alloc-sampler.ts, round 47): the heap's growth between collections.
      const exact = JSON.parse(readFileSync(join(dir, exactName), 'utf8')) as {
        bytes: number;
        kinds: Record<string, number>;
      };
      const kinds = Object.entries(exact.kinds)
        .map(([k, n]) => `${k} ${(n / RUNS).toFixed(3)}`)
        .join(', ');
      out += `=== ${ALLOC_WHO} JS heap allocated (counted, GCProfiler): ${(exact.bytes / (RUNS * CALLS)).toFixed(0)} B a call; collections a run: ${kinds}\n`;
    }
    out += `=== ${ALLOC_WHO} allocations (${join(dir, name)}), bytes a call over the measured runs\n`;
    out += `${summarizeAllocations(join(dir, name), RUNS * CALLS, Number(process.env.TOP ?? 40))}\n`;
  }
  const gwThreads = [...threadsCpu(pids.gateway)]
    .map(([name, us]) => [name, (us - (gwThreads0.get(name) ?? 0)) / RUNS / 1000] as const)
    .filter(([, ms]) => ms >= 0.01)
    .sort((x, y) => y[1] - x[1]);
  let hostsUs = 0;
  for (const [pid, us] of childrenCpu(pids.runner)) hostsUs += us - (hosts0.get(pid) ?? 0);
  const r1 = commandStats(await redis.info('commandstats'));
  const rc1 = redisCpu(await redis.info('cpu'), await redis.info('commandstats'));
  const calls = RUNS * CALLS;
  if (perf) {
    out += `=== ${PERF_WHO} main thread, perf cpu-clock at ${PERF_HZ} Hz, µs a call by innermost JS frame (self); data in ${dir}\n`;
    out += `${await perf.stop(calls, Number(process.env.TOP ?? 50))}\n`;
    // The same samples by whose code they are (perf-owners.ts; round 40 `par-calls` pointed it at
    // the gateway): µs a call by owner, by our file and by function, Node's internals charged to
    // their caller.
    const data = join(dir, `${PERF_WHO}.perf${PERF_JIT ? '.jit' : ''}`);
    out += `=== ${PERF_WHO} main thread by owner, µs a call\n${perfOwners(data, calls, Number(process.env.TOP ?? 50), undefined, 'call')}\n`;
  }
  ms.sort((x, y) => x - y);
  const per = (who: 'gateway' | 'runner', k: 'main' | 'all') => ((b[who][k] - a[who][k]) / calls).toFixed(1);
  const wakes = (who: 'gateway' | 'runner') => ((b[who].wakes - a[who].wakes) / RUNS).toFixed(1);
  // Minor page faults a run, the whole process (round 40 `par-calls`): each a trip through the
  // kernel that zeroes a page, e.g. malloc'd memory given back to the system and faulted in again.
  const faults = (who: 'gateway' | 'runner') => ((b[who].faults - a[who].faults) / RUNS).toFixed(1);
  // The main thread's time runnable but not running, ms a run (round 41 `par-hundred`): the load's
  // part of the run's wall time on the process that is the row's bound.
  const waited = (who: 'gateway' | 'runner') => ((b[who].waited - a[who].waited) / RUNS / 1000).toFixed(2);
  const cpuMs = {
    gateway: (b.gateway.all - a.gateway.all) / RUNS / 1000,
    runner: (b.runner.all - a.runner.all) / RUNS / 1000,
    hosts: hostsUs / RUNS / 1000,
    redis: (rc1.cpu - rc0.cpu) / RUNS / 1000,
    bench: (self1.user + self1.system) / RUNS / 1000,
  };
  const cpuSum = Object.values(cpuMs).reduce((x, y) => x + y, 0);
  const commands = [...r1]
    .map(([name, n]) => [name, (n - (r0.get(name) ?? 0)) / RUNS] as const)
    .filter(([name, n]) => n > 0 && name !== 'info')
    .sort((x, y) => y[1] - x[1]);
  out +=
    `${RUNS} runs of ${CALLS} parallel calls in ${(wall / 1000).toFixed(1)} s, run p50 ${ms[Math.floor(RUNS / 2)]?.toFixed(1)} ms\n` +
    `CPU µs a call, main thread (whole process): gateway ${per('gateway', 'main')} (${per('gateway', 'all')}), ` +
    `runner ${per('runner', 'main')} (${per('runner', 'all')}); main-thread wake-ups a run: gateway ${wakes('gateway')}, runner ${wakes('runner')}; ` +
    `page faults a run: gateway ${faults('gateway')}, runner ${faults('runner')}\n` +
    `main thread on a CPU / waiting for one, ms a run: gateway ${((b.gateway.main - a.gateway.main) / RUNS / 1000).toFixed(2)} / ${waited('gateway')}, ` +
    `runner ${((b.runner.main - a.runner.main) / RUNS / 1000).toFixed(2)} / ${waited('runner')}\n` +
    `whole-process CPU ms a run: ${Object.entries(cpuMs)
      .map(([who, ms]) => `${who} ${ms.toFixed(2)}`)
      .join(', ')}; sum ${cpuSum.toFixed(2)}, ÷ 2 CPUs ${(cpuSum / 2).toFixed(2)}\n` +
    `gateway threads on a CPU, ms a run: ${gwThreads.map(([name, ms]) => `${name} ${ms.toFixed(2)}`).join(', ')}\n` +
    `Redis commands a run: ${commands.reduce((s, [, n]) => s + n, 0).toFixed(1)}; ${commands
      .slice(0, 12)
      .map(([name, n]) => `${name} ${n.toFixed(2)}`)
      .join(', ')}\n` +
    `Redis CPU µs a call (INFO cpu, user+sys, the whole server): ${((rc1.cpu - rc0.cpu) / calls).toFixed(1)}; ` +
    `inside scripts (commandstats evalsha+eval usec): ${((rc1.scripts - rc0.scripts) / calls).toFixed(1)}\n` +
    `App: requests a run ${((app.requests - app0.requests) / RUNS).toFixed(1)}, new connections a run ` +
    `${((app.connections - app0.connections) / RUNS).toFixed(2)}, connections in all ${app.connections}`;
} finally {
  redis.disconnect();
  await cluster.stop();
  server.close();
}
console.log(out);
// GC_LOG_DIR (with BENCH_NODE_FLAGS="--import <abs>/test/bench/gc-log.ts"): the gateway's and the
// runner's collections over the measured runs, by kind, a run, and their time a run (µs).
if (process.env.GC_LOG_DIR) {
  for (const [who, pid] of Object.entries(pids)) {
    const byKind: Record<string, { n: number; ms: number }> = {};
    let text = '';
    try {
      text = readFileSync(join(process.env.GC_LOG_DIR, `gc-${pid}.jsonl`), 'utf8');
    } catch {
      // no collection logged
    }
    for (const l of text.split('\n').filter(Boolean)) {
      const e = JSON.parse(l) as { kind: string; t: number; ms: number };
      if (e.t < (epochWindow[0] ?? 0) || e.t > (epochWindow[1] ?? 0)) continue;
      const k = byKind[e.kind] ?? { n: 0, ms: 0 };
      byKind[e.kind] = { n: k.n + 1, ms: k.ms + e.ms };
    }
    console.log(
      `${who} GCs a run (count, µs): ${Object.entries(byKind)
        .map(([k, v]) => `${k} ${(v.n / RUNS).toFixed(3)} ${((v.ms * 1000) / RUNS).toFixed(1)}`)
        .join(', ')}`,
    );
  }
}
