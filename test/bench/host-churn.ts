/**
 * A host start's share of the CPU a run, amplified (round 39 `host-start`): the engine in this
 * process with its hosts replaced every MAX_RUNS runs (default 20, bench only: the product's bound is
 * 1,000), prewarm on as in the product, CLIENTS concurrent callers (the runner's 4 slots), RUNS
 * trivial runs. CPU is this process's own plus its reaped children's (/proc/self/stat utime + stime +
 * cutime + cstime: every host's whole life, read after `close` reaped them), per run, with the count
 * of hosts started. At 1,000 runs a host the same start costs 1/50 of the difference this shows.
 *
 *   node test/bench/host-churn.ts      (MAX_RUNS=20 CLIENTS=4 RUNS=2000)
 */
import { readFileSync } from 'node:fs';
import { createEngine } from '../../services/engine/src/index.ts';

const MAX_RUNS = Number(process.env.MAX_RUNS ?? 20);
const CLIENTS = Number(process.env.CLIENTS ?? 4);
const RUNS = Number(process.env.RUNS ?? 2000);
const PROGRAM = 'return [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, 0)';
const TICK_MS = 10;

/** utime + stime + cutime + cstime of this process, ms. */
function cpuMs(): { self: number; children: number } {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return { self: (f[11]! + f[12]!) * TICK_MS, children: (f[13]! + f[14]!) * TICK_MS };
}

const before = cpuMs();
let started = 0;
const engine = createEngine({
  maxRunsPerProcess: MAX_RUNS,
  onProcessEvent: (e) => {
    if (e.type === 'started') started++;
  },
});
const t = performance.now();
let left = RUNS;
await Promise.all(
  Array.from({ length: CLIENTS }, async () => {
    while (left-- > 0) {
      const out = await engine.execute(PROGRAM);
      if (out.valueJson !== '12') throw new Error(`run failed: ${JSON.stringify(out.failure)}`);
    }
  }),
);
const seconds = (performance.now() - t) / 1000;
await engine.close();
const after = cpuMs();
const self = (after.self - before.self) / RUNS;
const children = (after.children - before.children) / RUNS;
console.log(
  `${RUNS} runs, ${CLIENTS} clients, hosts replaced every ${MAX_RUNS} runs: ${started} hosts started, ${seconds.toFixed(1)} s; ` +
    `CPU a run ${(self + children).toFixed(3)} ms (engine ${self.toFixed(3)}, hosts ${children.toFixed(3)})`,
);
