/**
 * `node test/bench/run-ticks.ts` (round 42 `direct-reads`): `process.nextTick` calls and
 * readable-stream pushes a one-client sequential run (`Prefer: wait`, trivial program, the cluster
 * bench's share 0.5) costs the gateway and the runner (`tick-total.mjs` preloaded in both), after
 * `WARM` runs (default 300) over `RUNS` (default 500). A run's Redis replies reach the gateway on
 * its main connection and its subscriber (the end push) and the runner on its store, fair-share,
 * worker and blocking connections: each read through a socket's stream is one push and two ticks.
 * Counts, not times: read at any load.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 500);
const WARM = Number(process.env.WARM ?? 300);
const dir = mkdtempSync(join(tmpdir(), 'islet-run-ticks-'));
const cluster = await startOneClientCluster('0.5', {
  NODE_OPTIONS: `--import ${join(import.meta.dirname, 'tick-total.mjs')}`,
  TICK_DIR: dir,
});
const who = { gateway: cluster.gateways[0]?.pid, runner: cluster.runners[0]?.pid };
type Totals = { ticks: number; pushes: number };
const read = (pid: number | undefined): Totals =>
  JSON.parse(readFileSync(join(dir, `tick-total.${pid}.json`), 'utf8')) as Totals;
const settle = () => new Promise((r) => setTimeout(r, 500));
try {
  const once = trivialRun(cluster, 'Run ticks');
  await burst(once, WARM, 1);
  await settle();
  const a = { gateway: read(who.gateway), runner: read(who.runner) };
  await burst(once, RUNS, 1);
  await settle();
  const b = { gateway: read(who.gateway), runner: read(who.runner) };
  console.log(`a run over ${RUNS} one-client runs after ${WARM}:`);
  for (const k of ['gateway', 'runner'] as const)
    console.log(
      `  ${k.padEnd(8)} nextTick ${((b[k].ticks - a[k].ticks) / RUNS).toFixed(2)}  pushes ${((b[k].pushes - a[k].pushes) / RUNS).toFixed(2)}`,
    );
} finally {
  await cluster.stop();
}
