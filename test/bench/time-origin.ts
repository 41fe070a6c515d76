/**
 * `node test/bench/time-origin.ts` (`PROCS`, default 20): how far each new Node process's
 * `performance.timeOrigin` is from the wall clock, against core's `wallNow` (an offset read at the
 * edge of a ms of `Date.now()`). Stage stamps of two processes differ by the difference of their
 * origins' errors; a loaded machine preempts a starting process between Node's two reads of its
 * origin, and the process keeps that error for life (round 29, `pickup`).
 */
import { execFileSync } from 'node:child_process';

const PROCS = Number(process.env.PROCS ?? 20);
const probe = `import { wallNow } from '@islet/core';
const a = wallNow();
const b = performance.timeOrigin + performance.now();
console.log((b - a).toFixed(3));`;
const errors: number[] = [];
for (let i = 0; i < PROCS; i++) {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  errors.push(Number(out.trim()));
}
const sorted = [...errors].sort((x, y) => x - y);
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
console.log(`timeOrigin error, ms, ${PROCS} processes: ${errors.join(' ')}`);
console.log(
  `min ${at(0)} / p50 ${at(0.5)} / max ${at(1)}; past 0.1 ms: ${errors.filter((e) => Math.abs(e) > 0.1).length}, past 1 ms: ${errors.filter((e) => Math.abs(e) > 1).length}`,
);
