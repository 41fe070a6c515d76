/**
 * `node --no-node-snapshot test/bench/dispose-ways.ts`: a sandbox host's first turn of a trivial
 * program (the harness installed from its warmed cache, as host.ts does) ended three ways, each
 * `WAYS` in its own process or alternated in one (`WAYS=inside,undef,after`), `RUNS` each (default
 * 1000, after 200), process CPU µs p50 / mean of the turn and the isolate's dispose together, and of
 * the `applySync` alone:
 *   inside  `done` disposes the isolate from its callback (host-run.ts `finish`), with
 *           `Error.stackTraceLimit` 0 around the turn (the host until round 39): isolated-vm ends
 *           `applySync` with its "disposed during execution" error, caught
 *   undef   the same with the limit not a number (the host from round 39): no stack captured or
 *           formatted for that error
 *   after   `done` only notes the end; the turn returns and the isolate is disposed after it: no
 *           error, but a program that left work behind would hold the turn (README, round 39
 *           `dispose`, "Tried, not taken")
 * The teardown of the isolate is in every way's figure (inside the `applySync` for the first two).
 */
import { readFileSync } from 'node:fs';
import { CONFIG, make, PROGRAM, warmedCache } from './harness-isolate.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const WAYS = (process.env.WAYS ?? 'inside,undef,after').split(',');

const cache = warmedCache();

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const setLimit = (limit: number | undefined) => {
  (Error as { stackTraceLimit: number | undefined }).stackTraceLimit = limit;
};

/** One run's turn and dispose, µs: [both, the applySync alone]. */
function one(way: string): [number, number] {
  const m = make(cache);
  let ended = false;
  m.sink.done =
    way === 'after'
      ? () => {
          ended = true;
        }
      : () => m.isolate.dispose();
  const limit = Error.stackTraceLimit;
  const t0 = cpu();
  setLimit(way === 'inside' ? 0 : undefined);
  try {
    m.entry.applySync(undefined, ['start', PROGRAM, CONFIG, undefined, undefined, true], { timeout: 1000 });
  } catch {
    // the dispose from `done` ends the turn with isolated-vm's error, as in the host
  }
  setLimit(limit);
  const t1 = cpu();
  if (way === 'after' && !ended) throw new Error('the program did not end');
  m.entry.release();
  m.context.release();
  if (!m.isolate.isDisposed) m.isolate.dispose();
  return [cpu() - t0, t1 - t0];
}

const rows = new Map(WAYS.map((w) => [w, { all: [] as number[], apply: [] as number[] }]));
for (let i = 0; i < RUNS + 200; i++) {
  for (const w of i % 2 === 0 ? WAYS : [...WAYS].reverse()) {
    const [all, apply] = one(w);
    if (i < 200) continue;
    rows.get(w)!.all.push(all);
    rows.get(w)!.apply.push(apply);
  }
}
const p50 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const f = (a: number[]) => `${p50(a).toFixed(0)} / ${mean(a).toFixed(0)}`;
console.log(
  `dispose-ways: ${RUNS} each, process CPU µs p50 / mean, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
);
for (const [w, r] of rows)
  console.log(`  ${w.padEnd(6)} turn + dispose ${f(r.all)}; the applySync alone ${f(r.apply)}`);
