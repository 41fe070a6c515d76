/**
 * `node test/bench/perf-inclusive.ts <perf data> <units> [top]`: inclusive on-CPU µs a unit (run or
 * call) by frame from a `perf record -g` file at thread-perf.ts' rate (`PERF_HZ`), e.g. the
 * `runner.perf.jit` seq-cpu.ts leaves in `PROF_DIR` with `PERF=1 PERF_JIT=1 PERF_WHO=runner`: a
 * frame counts once a sample however often it is on the stack. `UNDER` (a regex): only the samples
 * with a frame matching it; `SHOW` (a regex): only the frames matching it are printed. seq-cpu.ts'
 * own summary is by innermost frame (self); this is what a step costs with all it calls, its JIT
 * tiers merged.
 *
 *   PROF_DIR=/tmp/p PERF=1 PERF_JIT=1 PERF_WHO=runner RUNS=800 node test/bench/seq-cpu.ts
 *   SHOW='beginAttempt|fromHash|fromFields|fieldsOf|begunOf' node test/bench/perf-inclusive.ts /tmp/p/runner.perf.jit 800
 */
import { execFileSync } from 'node:child_process';
import { PERF_HZ } from './thread-perf.ts';

const [file, units, top = '60'] = process.argv.slice(2);
if (!file || !units) throw new Error('usage: perf-inclusive.ts <perf data> <units> [top]');
const under = process.env.UNDER ? new RegExp(process.env.UNDER) : undefined;
const show = process.env.SHOW ? new RegExp(process.env.SHOW) : undefined;
const script = execFileSync('perf', ['script', '-i', file], {
  encoding: 'utf8',
  maxBuffer: 1 << 30,
  stdio: ['ignore', 'pipe', 'ignore'],
});
const inclusive = new Map<string, number>();
let samples = 0;
for (const block of script.split('\n\n')) {
  const lines = block.split('\n').filter(Boolean);
  if (lines.length < 2) continue;
  // "\t<address> <symbol>+0x<offset> (<object>)": the symbol alone.
  const frames = lines.slice(1).map((l) =>
    l
      .trim()
      .replace(/^[0-9a-f]+ /, '')
      .replace(/\+0x[0-9a-f]+/, '')
      .replace(/ \(.*\)$/, '')
      // One function under every tier V8 ran it in (`~` interpreted, `^` baseline, `+` Maglev,
      // `*` TurboFan): a step's cost is not split by how hot its code was in that sample.
      .replace(/^JS:[~^+*]'?/, 'JS:'),
  );
  if (under && !frames.some((f) => under.test(f))) continue;
  samples++;
  for (const f of new Set(frames)) inclusive.set(f, (inclusive.get(f) ?? 0) + 1);
}
const us = 1e6 / PERF_HZ / Number(units);
console.log(`${(samples * us).toFixed(1)} µs a unit in ${samples} samples${under ? ` under ${under}` : ''}`);
for (const [frame, n] of [...inclusive]
  .filter(([f]) => !show || show.test(f))
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(top)))
  console.log(`${(n * us).toFixed(1).padStart(8)}  ${frame.slice(0, 160)}`);
