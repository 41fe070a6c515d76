/**
 * `PROCESS=runner|gateway node test/bench/loop-counts.ts` (round 41 `pickup-direct` for the runner,
 * as `pickup-counts.ts`; round 43 `send-floor` for the gateway, as `gw-loop-counts.ts`): what that
 * process's event loop is asked to do a one-client sequential run (`Prefer: wait`, trivial program,
 * the cluster bench's share 0.5): promises made, `nextTick`/`setImmediate`/`setTimeout`/
 * `queueMicrotask` calls, in a runner BullMQ's Worker methods on the path
 * (`loop-counts-preload.mjs`; `COUNT_SITES=1`: where the promises are made, by site), after `WARM`
 * runs (default 300) over `RUNS` (default 500). Counts, not times: read at any load.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const which = process.env.PROCESS === 'gateway' ? 'gateway' : 'runner';
const RUNS = Number(process.env.RUNS ?? 500);
const WARM = Number(process.env.WARM ?? 300);
// CLIENTS: that many runs at once (16: the cluster bench's CPU-a-run row); default 1 (sequential).
const CLIENTS = Number(process.env.CLIENTS ?? 1);
const dir = mkdtempSync(join(tmpdir(), 'islet-loop-counts-'));
const cluster = await startOneClientCluster('0.5', {
  NODE_OPTIONS: `--import ${join(import.meta.dirname, 'loop-counts-preload.mjs')}`,
  LOOP_COUNTS_PROCESS: which,
  LOOP_COUNTS_DIR: dir,
});
const pid = (which === 'gateway' ? cluster.gateways : cluster.runners)[0]?.pid;
/** The preload's file, read again when caught while the preload rewrites it (an empty or cut text). */
function readJson(file: string): Record<string, number> {
  for (let tries = 0; ; tries++) {
    try {
      return JSON.parse(readFileSync(join(dir, `${file}.${pid}.json`), 'utf8')) as Record<string, number>;
    } catch (err) {
      if (tries >= 20) throw err;
      // The preload writes it every 100 ms: wait out the write (20 tight reads were too few at load ~20).
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}
const settle = () => new Promise((r) => setTimeout(r, 300));
try {
  const once = trivialRun(cluster, 'Loop counts');
  await burst(once, WARM, CLIENTS);
  await settle();
  const a = readJson('loop-counts');
  await burst(once, RUNS, CLIENTS);
  await settle();
  const b = readJson('loop-counts');
  console.log(`${which} (pid ${pid}), a run over ${RUNS} runs (${CLIENTS} clients) after ${WARM}:`);
  for (const k of Object.keys(b))
    console.log(`  ${k.padEnd(28)} ${(((b[k] ?? 0) - (a[k] ?? 0)) / RUNS).toFixed(2)}`);
  if (process.env.TIMER_SITES === '1') {
    console.log('setTimeout sites (whole life, the warm-up included; divide by WARM + RUNS for a run):');
    for (const [site, n] of Object.entries(readJson('timer-sites'))
      .sort((x, y) => y[1] - x[1])
      .slice(0, 20))
      console.log(`  ${String(n).padStart(7)}  ${site}`);
  }
  if (process.env.COUNT_SITES === '1') {
    console.log('promise sites (whole life, the warm-up included; divide by WARM + RUNS for a run):');
    for (const [site, n] of Object.entries(readJson('promise-sites'))
      .sort((x, y) => y[1] - x[1])
      .slice(0, 60))
      console.log(`  ${String(n).padStart(7)}  ${site}`);
  }
} finally {
  await cluster.stop();
}
