/**
 * Round 47 `premake`: where in a sequential run's cycle the sandbox hosts' CPU falls, read from a
 * kept seq-layout.ts trace (`node test/bench/premake-windows.ts /dev/shm/seq-layout-<pid>`): each
 * run's cycle cut at its stamps into the pick-up hop (enqueued → pickedUp), the engine stage
 * (pickedUp → endSent: the program on its host), the end hop (endSent → the client's first bytes)
 * and the client's turn (first bytes → the next run's enqueued); µs a run of every host thread on a
 * CPU in each (main threads and the rest apart), and the host main threads' CPU in the end hop by
 * host: the one on a CPU last before endSent (the run's: it sent `done`) and the others. A make held
 * to the next run's start (engine.ts `holdsNext`) moves host CPU from the end hop to the engine stage.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Meta } from './seq-layout-read.ts';
import { statesOf } from './seq-layout-states.ts';

const base = process.argv[2];
if (!base) throw new Error('usage: premake-windows.ts /dev/shm/seq-layout-<pid>');
const meta = JSON.parse(readFileSync(`${base}.json`, 'utf8')) as Meta;
const text = execFileSync('perf', ['script', '-i', `${base}.data`, '-F', 'tid,cpu,time,event,trace'], {
  maxBuffer: 1 << 30,
}).toString();
const { onCpu } = statesOf(text, meta);
const label = new Map(meta.label);
const hostMain = (tid: number) => label.get(tid) === 'host';
const hostAny = (tid: number) => (label.get(tid) ?? '').split(':')[0] === 'host';
const hostCpu = onCpu.filter((r) => hostAny(r.tid)).sort((a, b) => a.from - b.from);
const overlap = (a: number, b: number, pick: (tid: number) => boolean) => {
  let s = 0;
  for (const r of hostCpu) {
    if (r.from >= b) break;
    if (r.to <= a || !pick(r.tid)) continue;
    s += Math.min(r.to, b) - Math.max(r.from, a);
  }
  return s * 1e6;
};
const hops = meta.hops;
const windows = ['pick-up hop', 'engine stage', 'end hop', "client's turn"] as const;
const sums = new Map<string, number>();
const add = (k: string, v: number) => sums.set(k, (sums.get(k) ?? 0) + v);
let n = 0;
let endRun = 0;
let endOther = 0;
for (let i = 0; i + 1 < hops.length; i++) {
  const h = hops[i]!;
  const next = hops[i + 1]!;
  const cuts = [h.enqueued, h.pickedUp, h.endSent, h.bytesAt, next.enqueued];
  if (cuts.some((t) => !Number.isFinite(t))) continue;
  n++;
  for (let w = 0; w < windows.length; w++) {
    add(`${windows[w]} main`, overlap(cuts[w]!, cuts[w + 1]!, hostMain));
    add(
      `${windows[w]} other threads`,
      overlap(cuts[w]!, cuts[w + 1]!, (t) => hostAny(t) && !hostMain(t)),
    );
  }
  // The run's host: the host main thread whose last stretch on a CPU began latest before endSent.
  let runHost: number | undefined;
  let latest = -1;
  for (const r of hostCpu) {
    if (r.from > h.endSent) break;
    if (hostMain(r.tid) && r.from > latest) [latest, runHost] = [r.from, r.tid];
  }
  endRun += overlap(h.endSent, h.bytesAt, (t) => t === runHost);
  endOther += overlap(h.endSent, h.bytesAt, (t) => hostMain(t) && t !== runHost);
}
console.log(`${n} runs; host CPU µs a run (mean), by window of the cycle:`);
for (const w of windows)
  console.log(
    `  ${w.padEnd(14)} main ${(sums.get(`${w} main`)! / n).toFixed(0).padStart(5)}   other threads ${(sums.get(`${w} other threads`)! / n).toFixed(0).padStart(5)}`,
  );
console.log(
  `  end hop, host main threads: the run's host ${(endRun / n).toFixed(0)}, other hosts ${(endOther / n).toFixed(0)}`,
);
