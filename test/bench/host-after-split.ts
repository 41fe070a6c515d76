/**
 * `node --no-node-snapshot test/bench/host-after-split.ts`: the two parts of a sandbox host's
 * after-run work, each timed on its own in this process (thread CPU and wall, `RUNS`, default 300):
 * making an isolate as host.ts `prepare` does (isolate, context, the harness from a code cache, run)
 * and disposing one that ran a trivial program. Round 28 `host-after` (test/bench/README.md).
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { installHarness } from '../../services/engine/src/harness-install.ts';

const RUNS = Number(process.env.RUNS ?? 300);
const HARNESS = readFileSync(new URL('../../services/engine/src/guest/harness.js', import.meta.url), 'utf8');
const first = new ivm.Isolate({ memoryLimit: 512 });
const cache = (
  first.compileScriptSync(HARNESS, {
    filename: 'islet:harness',
    produceCachedData: true,
  } as ivm.ScriptInfo) as ivm.Script & ivm.CachedDataResult
).cachedData;
first.dispose();

const ignore = () => undefined;
const make = () => {
  const isolate = new ivm.Isolate({ memoryLimit: 512 });
  const context = isolate.createContextSync();
  installHarness(
    isolate,
    context,
    HARNESS,
    { log: ignore, call: ignore, done: ignore, fail: ignore },
    cache ? { cachedData: cache } : {},
  );
  return { isolate, context };
};
const cpu = () => process.threadCpuUsage();
const ms = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage) => (b.user - a.user + b.system - a.system) / 1000;
let makeCpu = 0;
let makeWall = 0;
let disposeCpu = 0;
let disposeWall = 0;
for (let i = 0; i < RUNS + 20; i++) {
  const c0 = cpu();
  const w0 = performance.now();
  const { isolate, context } = make();
  const c1 = cpu();
  const w1 = performance.now();
  context.evalSync('const x = [1, 2, 3].map((n) => n * 2); x.reduce((a, b) => a + b, 0)');
  const c2 = cpu();
  const w2 = performance.now();
  context.release();
  isolate.dispose();
  const c3 = cpu();
  const w3 = performance.now();
  if (i < 20) continue;
  makeCpu += ms(c0, c1);
  makeWall += w1 - w0;
  disposeCpu += ms(c2, c3);
  disposeWall += w3 - w2;
}
const f = (x: number) => (x / RUNS).toFixed(3);
console.log(
  `${RUNS} isolates, ms each (this thread's CPU / wall): make ${f(makeCpu)} / ${f(makeWall)}; dispose ${f(disposeCpu)} / ${f(disposeWall)}`,
);
