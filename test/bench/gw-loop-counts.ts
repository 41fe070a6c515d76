/**
 * `node test/bench/gw-loop-counts.ts` (round 43 `send-floor`): what the gateway's event loop is
 * asked to do a one-client sequential run (`Prefer: wait`, trivial program, the cluster bench's
 * share 0.5): promises made, `nextTick`/`setImmediate`/`setTimeout`/`queueMicrotask` calls
 * (`gw-loop-counts-preload.mjs`; `GW_COUNT_SITES=1`: where the promises are made, by site), after `WARM` runs (default 300) over `RUNS`
 * (default 500). Counts, not times: read at any load. The runner's is `pickup-counts.ts`.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 500);
const WARM = Number(process.env.WARM ?? 300);
const dir = mkdtempSync(join(tmpdir(), 'islet-gw-counts-'));
const cluster = await startOneClientCluster('0.5', {
  NODE_OPTIONS: `--import ${join(import.meta.dirname, 'gw-loop-counts-preload.mjs')}`,
  GW_COUNTS_DIR: dir,
});
const pid = cluster.gateways[0]?.pid;
const read = (): Record<string, number> =>
  JSON.parse(readFileSync(join(dir, `gw-counts.${pid}.json`), 'utf8')) as Record<string, number>;
const settle = () => new Promise((r) => setTimeout(r, 300));
try {
  const once = trivialRun(cluster, 'Gateway counts');
  await burst(once, WARM, 1);
  await settle();
  const a = read();
  await burst(once, RUNS, 1);
  await settle();
  const b = read();
  console.log(`gateway (pid ${pid}), a run over ${RUNS} one-client runs after ${WARM}:`);
  for (const k of Object.keys(b))
    console.log(`  ${k.padEnd(28)} ${(((b[k] ?? 0) - (a[k] ?? 0)) / RUNS).toFixed(2)}`);
  if (process.env.GW_COUNT_SITES === '1') {
    const sites = JSON.parse(readFileSync(join(dir, `gw-promise-sites.${pid}.json`), 'utf8')) as Record<
      string,
      number
    >;
    console.log('promise sites (whole life, the warm-up included; divide by WARM + RUNS for a run):');
    for (const [site, n] of Object.entries(sites)
      .sort((x, y) => y[1] - x[1])
      .slice(0, 60))
      console.log(`  ${String(n).padStart(7)}  ${site}`);
  }
} finally {
  await cluster.stop();
}
