/**
 * How often a cluster's sandbox hosts are replaced under the bench's 16-client load, and why (round
 * 39 `host-start`): a devstack cluster as bench:cluster starts it (1 gateway, 1 read-only runner with
 * BENCH_SLOTS slots), RUNS trivial runs from 16 clients, the runner's
 * `islet_sandbox_process_restarts_total` by reason before and after (max-runs: the 1,000-run bound;
 * max-memory: the resident growth bound), and the runner's process tree's CPU a run (runner + hosts).
 *
 *   node test/bench/host-replacements.ts        (RUNS=8000)
 */
import { startCluster } from '@islet/devstack';
import { cpuMs, processTree } from './capacity-cpu.ts';
import { burst, metricsOf, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 8000);
const CLIENTS = 16;

const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: { ISLET_RATE_LIMIT_PER_MINUTE: '1000000' },
});
const restarts = async () => {
  const text = await metricsOf(cluster.runners[0]!.url);
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^islet_sandbox_process_restarts_total\{([^}]*)\} (\d+)/gm)) {
    const reason = /reason="([^"]+)"/.exec(m[1]!)?.[1] ?? '?';
    out[reason] = (out[reason] ?? 0) + Number(m[2]);
  }
  return out;
};
try {
  const run = trivialRun(cluster, 'host-replacements');
  // The bench's own warm-up: every slot's host started, outside the count.
  await burst(run, 48, CLIENTS);
  const before = await restarts();
  const runner = cluster.runners[0]!.pid!;
  // Hosts that start during the window are children of the runner: every process of its tree, at
  // the end, plus those gone meanwhile are missed (the retired hosts' CPU): read as a floor.
  const treeBefore = new Map(processTree(runner).map((p) => [p, cpuMs(p)]));
  const t = performance.now();
  await burst(run, RUNS, CLIENTS);
  const seconds = (performance.now() - t) / 1000;
  const after = await restarts();
  const tree = processTree(runner);
  let cpu = 0;
  for (const p of tree) {
    const now = cpuMs(p);
    if (!Number.isNaN(now)) cpu += now - (treeBefore.get(p) ?? 0);
  }
  const reasons = Object.fromEntries(
    [...new Set([...Object.keys(before), ...Object.keys(after)])].map((r) => [
      r,
      (after[r] ?? 0) - (before[r] ?? 0),
    ]),
  );
  console.log(
    `${RUNS} runs at ${CLIENTS} clients in ${seconds.toFixed(1)} s: hosts replaced ${JSON.stringify(reasons)}; ` +
      `runner tree (${tree.length} processes at the end) CPU ${(cpu / RUNS).toFixed(3)} ms a run (live processes only)`,
  );
} finally {
  await cluster.stop();
}
