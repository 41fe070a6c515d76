/**
 * `node test/bench/pickup-counts.ts` (round 41 `pickup-direct`): what the runner's event loop is
 * asked to do a one-client sequential run (`Prefer: wait`, trivial program, the cluster bench's
 * share 0.5): promises made, `nextTick`/`setImmediate`/`setTimeout`/`queueMicrotask` calls and
 * calls of BullMQ's Worker methods on the path (`pickup-counts-preload.mjs`), after `WARM` runs
 * (default 300) over `RUNS` (default 500). Counts, not times: read at any load.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 500);
const WARM = Number(process.env.WARM ?? 300);
const dir = mkdtempSync(join(tmpdir(), 'islet-pickup-counts-'));
const cluster = await startOneClientCluster('0.5', {
  NODE_OPTIONS: `--import ${join(import.meta.dirname, 'pickup-counts-preload.mjs')}`,
  PICKUP_COUNTS_DIR: dir,
});
const pid = cluster.runners[0]?.pid;
const read = (): Record<string, number> =>
  JSON.parse(readFileSync(join(dir, `pickup-counts.${pid}.json`), 'utf8')) as Record<string, number>;
const settle = () => new Promise((r) => setTimeout(r, 300));
try {
  const once = trivialRun(cluster, 'Pickup counts');
  await burst(once, WARM, 1);
  await settle();
  const a = read();
  await burst(once, RUNS, 1);
  await settle();
  const b = read();
  console.log(`runner (pid ${pid}), a run over ${RUNS} one-client runs after ${WARM}:`);
  for (const k of Object.keys(b))
    console.log(`  ${k.padEnd(28)} ${(((b[k] ?? 0) - (a[k] ?? 0)) / RUNS).toFixed(2)}`);
} finally {
  await cluster.stop();
}
