/**
 * `node test/bench/runner-callgrind.ts` (round 52 `runner-own`): the runner's own instructions a run,
 * counted — the one-client stack (`startOneClientCluster`'s settings) with its runner process under
 * callgrind (V8 single-threaded, its hash and random seeds fixed, JIT code named by
 * `--perf-basic-prof`), `WARM` runs (default 300) then `READINGS` (default 2) windows of `RUNS` runs
 * (default 400), callgrind's counters dumped and zeroed (`callgrind_control -d`) at each window's
 * edges; each window's file is read by `runner-callgrind-report.ts` (self and inclusive a run, by
 * function, JIT'd code named from V8's perf map). Counts, not times: no bench lock needed. The
 * gateway, Redis and the sandbox hosts run natively; only the runner's main process is counted.
 *
 * How the runner is wrapped: devstack spawns `process.execPath`; this process points it at a shell
 * script that execs valgrind for the runner's `main.ts` and the real node for anything else.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@islet/devstack';
import { burst, trivialRun } from './cluster-figures.ts';
import { report } from './runner-callgrind-report.ts';

const WARM = Number(process.env.WARM ?? 300);
const RUNS = Number(process.env.RUNS ?? 400);
const READINGS = Number(process.env.READINGS ?? 2);
const TOP = Number(process.env.TOP ?? 20);
const IDLE_SECS = Number(process.env.IDLE_SECS ?? 0);
const dir = process.env.CG_DIR ?? mkdtempSync(join(tmpdir(), 'islet-runner-cg-'));
const node = process.execPath;
const wrapper = join(dir, 'node-or-callgrind.sh');
writeFileSync(
  wrapper,
  `#!/bin/sh
case "$*" in
  *runner/src/main.ts*) exec valgrind --tool=callgrind --smc-check=all-non-file --dump-instr=no \\
    --callgrind-out-file=${dir}/callgrind.out.%p ${node} --single-threaded --hash-seed=1 --random-seed=1 \\
    --perf-basic-prof "$@" ;;
  *) exec ${node} "$@" ;;
esac
`,
);
chmodSync(wrapper, 0o755);
Object.defineProperty(process, 'execPath', { value: wrapper });
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  readyTimeoutMs: 600_000,
  env: {
    ISLET_TENANT_POOL_SHARE: process.env.BENCH_TENANT_SHARE ?? '0.5',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
  },
});
Object.defineProperty(process, 'execPath', { value: node });
const pid = cluster.runners[0]?.pid;
if (!pid) throw new Error('no runner pid');
const dump = (label: string) =>
  execFileSync('callgrind_control', [`--dump=${label}`, String(pid)], { stdio: 'pipe' });
try {
  const once = trivialRun(cluster, 'Runner callgrind');
  await burst(once, WARM, 1);
  dump('warm');
  for (let i = 1; i <= READINGS; i++) {
    const t0 = new Date().toISOString();
    await burst(once, RUNS, 1);
    dump(`reading${i}`);
    console.log(`reading ${i}: ${RUNS} runs, ${t0} → ${new Date().toISOString()}`);
  }
  // IDLE_SECS: a window with no run after the readings — the runner's own timers' work a second
  // (locks, stalled checks, metrics, the collector's idle tasks), which a reading also holds in
  // proportion to its length: under valgrind a run is slow, so a slower window holds more of it.
  if (IDLE_SECS > 0) {
    await new Promise((r) => setTimeout(r, IDLE_SECS * 1000));
    dump('idle');
    console.log(`idle: ${IDLE_SECS} s with no run (file ${READINGS + 2})`);
  }
} finally {
  await cluster.stop();
}
// `callgrind_control -d` writes callgrind.out.<pid>.<n>, n = 1 (the warm-up), 2, 3, … (the readings).
const files = readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${pid}.`));
console.log(`runner pid ${pid}; files in ${dir}: ${files.join(' ')}`);
for (let i = 1; i <= READINGS; i++) {
  const file = `callgrind.out.${pid}.${i + 1}`;
  if (!files.includes(file)) continue;
  console.log(`\n== reading ${i} (${file}), a run over ${RUNS}`);
  console.log(report(join(dir, file), `/tmp/perf-${pid}.map`, RUNS, TOP));
}
if (IDLE_SECS > 0 && files.includes(`callgrind.out.${pid}.${READINGS + 2}`)) {
  console.log(`\n== idle ${IDLE_SECS} s, a second`);
  console.log(
    report(join(dir, `callgrind.out.${pid}.${READINGS + 2}`), `/tmp/perf-${pid}.map`, IDLE_SECS, TOP),
  );
}
