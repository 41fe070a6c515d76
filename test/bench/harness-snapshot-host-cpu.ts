/**
 * `node --no-node-snapshot test/bench/harness-snapshot-host-cpu.ts`: a pooled sandbox host's main
 * thread CPU a run (its run and the make of its next isolate), from /proc/<pid>/task/<pid>/schedstat
 * read `GAP` ms (default 5) after each of `RUNS` (default 1000) sequential trivial runs through the
 * engine, after 100 warm-up runs; a host's first read is its baseline (hosts retired meanwhile are
 * skipped). Round 42 `harness-snapshot` ran it alternately with the host as it is and with
 * `harness-snapshot-host.patch` applied (`git apply`), under the bench lock.
 */
import { readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';
import { PROGRAM } from './baselines.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const GAP = Number(process.env.GAP ?? 5);
const engine = createEngine({ prewarm: false });
const cpu = (pid: number) => {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
};
try {
  for (let i = 0; i < 100; i++) {
    await engine.execute(PROGRAM);
    await new Promise((r) => setTimeout(r, GAP));
  }
  // Per host: its main thread's CPU after each of its runs; a run's CPU is from the host's last run's end read to its own.
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const runs = new Map<number, number>();
  for (let i = 0; i < RUNS; i++) {
    const pid = (await engine.execute(PROGRAM)).hostPid as number;
    await new Promise((r) => setTimeout(r, GAP));
    const c = cpu(pid);
    if (c === undefined) continue;
    if (!first.has(pid)) {
      first.set(pid, c);
      runs.set(pid, 0);
    } else runs.set(pid, (runs.get(pid) ?? 0) + 1);
    last.set(pid, c);
  }
  let sum = 0;
  let n = 0;
  for (const [p, c] of first) {
    sum += (last.get(p) ?? c) - c;
    n += runs.get(p) ?? 0;
  }
  console.log(
    `hosts ${first.size}, runs counted ${n}; a host's main thread CPU a run ${(sum / n / 1000).toFixed(1)} µs`,
  );
} finally {
  await engine.close();
}
