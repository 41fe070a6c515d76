/**
 * `node test/bench/seq-cpu.ts`: the gateway's and the runner's CPU per one-client sequential run
 * (`Prefer: wait`, trivial program, `BENCH_TENANT_SHARE` as `sequential.ts`, default 0.5), the
 * row "one client, sequential" charges to their JavaScript. After `WARM` runs (default 1500: V8
 * still compiles hot code through the first thousand) it reads, over `RUNS` (default 1000): each
 * process's main thread's time on a CPU (`/proc/<pid>/schedstat`, ns: the thread a run's path
 * waits for) and the whole process's (`/proc/<pid>/stat`, 10 ms ticks: GC and compiler threads
 * too). CPU time does not depend on the wait for a core as latency does, so a change's figure is
 * read at any load (caches colder under load still move it by some %). `PROF=1` also takes
 * `--cpu-prof` profiles of both (`PROF_DIR`; the profiler's own cost is in the figures then) and
 * prints their self time per run over the whole process life (`profile-summary.ts`).
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOneClientCluster, trivialRun } from './cluster-figures.ts';
import { summarize } from './profile-summary.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const WARM = Number(process.env.WARM ?? 1500);
const PROF = process.env.PROF === '1';
const dir = PROF ? (process.env.PROF_DIR ?? mkdtempSync(join(tmpdir(), 'islet-seq-prof-'))) : '';

const cluster = await startOneClientCluster(
  '0.5',
  PROF ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=100` } : {},
);
const pids = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };

function cpu(pid: number | undefined) {
  if (pid === undefined) return { main: 0, all: 0 };
  const main = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { main: main / 1000, all: (Number(f[11]) + Number(f[12])) * 10_000 };
}

let line = '';
try {
  const once = trivialRun(cluster, 'Sequential CPU');
  for (let i = 0; i < WARM; i++) await once();
  const a = { gateway: cpu(pids.gateway), runner: cpu(pids.runner) };
  const started = Date.now();
  for (let i = 0; i < RUNS; i++) await once();
  const b = { gateway: cpu(pids.gateway), runner: cpu(pids.runner) };
  const per = (who: 'gateway' | 'runner', k: 'main' | 'all') => ((b[who][k] - a[who][k]) / RUNS).toFixed(0);
  line =
    `${RUNS} runs in ${((Date.now() - started) / 1000).toFixed(1)} s; CPU µs/run, main thread (whole process): ` +
    `gateway ${per('gateway', 'main')} (${per('gateway', 'all')}), runner ${per('runner', 'main')} (${per('runner', 'all')})`;
} finally {
  await cluster.stop();
}
console.log(line);
if (PROF) {
  for (const f of readdirSync(dir)) {
    const who = Object.entries(pids).find(([, pid]) => pid !== undefined && f.includes(`.${pid}.`))?.[0];
    if (!who) continue;
    console.log(`=== ${who} (${join(dir, f)}), per run over the whole life (${WARM + RUNS} runs)`);
    console.log(summarize(join(dir, f), WARM + RUNS + 50, Number(process.env.TOP ?? 40)));
  }
}
