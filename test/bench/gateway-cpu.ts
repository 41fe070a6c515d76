/**
 * `node test/bench/gateway-cpu.ts`: the gateway's CPU per run, from its process's own CPU time
 * (`/proc/<pid>/stat`, not a profiler's samples, which a loaded machine inflates with the time the
 * process waited for a core). A local cluster (1 gateway, 1 read-only runner with `BENCH_SLOTS`
 * slots, default 4) runs trivial `Prefer: wait` runs: `RUNS` (default 300) from one client, then
 * `RUNS` from 16, each after a warm-up; prints the gateway's and the runner's (its own process,
 * sandbox hosts not included) ms of CPU per run.
 */
import { readFileSync } from 'node:fs';
import { startCluster } from '@islet/devstack';
import { burst, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 300);
/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ). */
const TICKS = 100;
const cpuMs = (pid: number | undefined) => {
  if (pid === undefined) return Number.NaN;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
};

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
});
try {
  const once = trivialRun(cluster, 'Measure a trivial program');
  const gateway = cluster.gateways[0]?.pid;
  const runner = cluster.runners[0]?.pid;
  for (const clients of [1, 16]) {
    const batch = (n: number) => burst(once, n, clients);
    await batch(Math.max(50, clients * 4));
    const before = [cpuMs(gateway), cpuMs(runner)] as const;
    const started = performance.now();
    await batch(RUNS);
    const seconds = (performance.now() - started) / 1000;
    const gw = (cpuMs(gateway) - before[0]) / RUNS;
    const rn = (cpuMs(runner) - before[1]) / RUNS;
    console.log(
      `${String(clients).padStart(2)} client(s), ${RUNS} runs: gateway ${gw.toFixed(2)} ms CPU/run, runner ${rn.toFixed(2)}; ${(RUNS / seconds).toFixed(1)} runs/s`,
    );
  }
} finally {
  await cluster.stop();
}
