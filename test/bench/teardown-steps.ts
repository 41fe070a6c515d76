/**
 * `node --no-node-snapshot --expose-gc test/bench/teardown-steps.ts`: what a sandbox host's thread
 * does between writing a run's `done` and being idle, step by step, as host-run.ts `finish` does it
 * (the harness from its warmed cache as host.ts installs it, a trivial program, `RUNS` a way, after
 * 200 warm-up runs; ways alternated in one process, `WAYS`, a `GAP_MS` sleep between runs so a
 * pool thread's work is over before the next run):
 *   inside  `done` disposes the isolate from its callback and the turn unwinds (the host today):
 *           isolated-vm drops its last reference to the isolate's environment as `applySync`
 *           unwinds, and V8 tears the isolate down there, on this thread
 *   pool    the same, but the callback first asks the isolate for its heap statistics (async):
 *           that task holds a second reference on isolated-vm's pool thread, so the teardown runs
 *           there once the turn has let go of the isolate's lock
 *   after   `done` only notes the end; the turn returns; the isolate is disposed later (here at
 *           once after the turn): the teardown is in that dispose (a program that left work
 *           behind would hold the turn: README round 39 `dispose`, "Tried, not taken")
 * Per step, this thread's wall µs p50 / mean (nothing else runs on it meanwhile): `dispose` (the call in the
 * callback), `unwind` (callback returned → `applySync` back: V8 ends the turn, the teardown when it
 * is here), `releases` (`entry.release()` + `context.release()` + the `isDisposed` check), `later`
 * (`after`'s dispose); and the process's CPU over the run and the gap (all threads), and the
 * process's RSS and the number of isolates (`ivm` heap) before → after.
 */
import { readFileSync } from 'node:fs';
import { CONFIG, make, PROGRAM, warmedCache } from './harness-isolate.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const GAP_MS = Number(process.env.GAP_MS ?? 3);
const WAYS = (process.env.WAYS ?? 'inside,pool,after').split(',');

const cache = warmedCache();

/** Wall µs on this thread (its CPU clock via getrusage has a tick's resolution here). */
const thread = () => performance.now() * 1000;
const proc = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Row = Record<'dispose' | 'unwind' | 'releases' | 'later' | 'proc', number[]>;
const rows = new Map<string, Row>(
  WAYS.map((w) => [w, { dispose: [], unwind: [], releases: [], later: [], proc: [] }]),
);

async function one(way: string, keep: boolean): Promise<void> {
  const m = make(cache);
  let tCb = 0;
  let tDisposed = 0;
  let ended = false;
  m.sink.done = () => {
    tCb = thread();
    if (way === 'after') {
      ended = true;
    } else {
      if (way === 'pool') void m.isolate.getHeapStatistics().catch(() => undefined);
      m.isolate.dispose();
    }
    tDisposed = thread();
  };
  const p0 = proc();
  const limit = Error.stackTraceLimit;
  (Error as { stackTraceLimit: number | undefined }).stackTraceLimit = undefined;
  try {
    m.entry.applySync(undefined, ['start', PROGRAM, CONFIG, undefined, undefined, true], { timeout: 1000 });
  } catch {
    // isolated-vm's "disposed during execution", as in the host
  }
  Error.stackTraceLimit = limit;
  const tBack = thread();
  if (way === 'after' && !ended) throw new Error('the program did not end');
  let tLater = tBack;
  if (way === 'after') {
    m.isolate.dispose();
    tLater = thread();
  }
  m.entry.release();
  m.context.release();
  void m.isolate.isDisposed;
  const tRel = thread();
  await sleep(GAP_MS);
  if (!keep) return;
  const r = rows.get(way)!;
  r.dispose.push(tDisposed - tCb);
  r.unwind.push(tBack - tDisposed);
  r.later.push(tLater - tBack);
  r.releases.push(tRel - tLater);
  r.proc.push(proc() - p0);
}

const rss0 = process.memoryUsage().rss;
for (let i = 0; i < RUNS + 200; i++)
  for (const w of i % 2 === 0 ? WAYS : [...WAYS].reverse()) await one(w, i >= 200);
await sleep(50);
const rss1 = process.memoryUsage().rss;
const p50 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const f = (a: number[]) => `${p50(a).toFixed(0)} / ${mean(a).toFixed(0)}`;
console.log(
  `teardown-steps: ${RUNS} a way, GAP_MS ${GAP_MS}, this thread's wall µs p50 / mean, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}; RSS ${(rss0 / 1e6).toFixed(1)} → ${(rss1 / 1e6).toFixed(1)} MB`,
);
for (const [w, r] of rows)
  console.log(
    `  ${w.padEnd(6)} dispose ${f(r.dispose)}; unwind ${f(r.unwind)}; later dispose ${f(r.later)}; releases ${f(r.releases)}; process (all threads, run + gap) ${f(r.proc)}`,
  );
