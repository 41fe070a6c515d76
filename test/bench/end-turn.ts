/**
 * The gateway's turn on a pushed end, stamp by stamp (round 40, `seq-stages`): reads the stamp files
 * `pickup-hop.ts KEEP=1` leaves (`pickup-hop-preload.mjs`: the gateway's socket `data` events and
 * writes, and any `globalThis.__pickupHop(label)` a local edit adds in its code), and for each pushed
 * end (a `data` event of the subscriber's connection of at least `MIN_BYTES`, default 600) lists
 * every gateway stamp from it to the response's write (the next write on another connection),
 * each from the one before: µs p50 / mean over the ends found.
 *
 * `test/bench/seq-stages.patch` (round 40) adds those stamps: the gateway's hub message (`g-msg`),
 * its waiter's loop (`g-loop`), the pushed end parsed, read into a run (`g-fromFields`, the two
 * deciphers), the route, the record and `onSend`; the runner's `endSent`, the end's seals, its
 * hand-over to the job's completion and BullMQ's completion arguments (`c-enter`, `c-args`); and the
 * pick-up's steps (`p-*`, `h-*`, `e-*`) that `pickup-hop.ts` lists.
 *
 *   git apply test/bench/seq-stages.patch
 *   KEEP=1 PERF=0 RUNS=400 node test/bench/pickup-hop.ts; node test/bench/end-turn.ts <the stamps' dir>
 *   git apply -R test/bench/seq-stages.patch
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pct } from './baselines.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: end-turn.ts <stamps dir>');
const MIN_BYTES = Number(process.env.MIN_BYTES ?? 600);
const ev: { t: number; ev: string; fd: number; size: number }[] = [];
for (const f of readdirSync(dir)) {
  if (!/^pickup-hop-gateway-\d+\.txt$/.test(f)) continue;
  for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
    const [ns, e, a, b] = line.split(' ');
    if (!ns || !e || e === 'clock') continue;
    ev.push({ t: Number(BigInt(ns)) / 1e3, ev: e, fd: Number(a ?? -1), size: Number(b ?? 0) });
  }
}
ev.sort((x, y) => x.t - y.t);
// The subscriber's connection: the fd whose data events are followed by a `g-msg` stamp.
const subFd = new Map<number, number>();
for (let i = 0; i + 1 < ev.length; i++)
  if (ev[i]!.ev === 'data' && ev[i + 1]!.ev === 'g-msg')
    subFd.set(ev[i]!.fd, (subFd.get(ev[i]!.fd) ?? 0) + 1);
const fd = [...subFd].sort((a, b) => b[1] - a[1])[0]?.[0];
const steps = new Map<string, number[]>();
const whole: number[] = [];
for (let i = 0; i < ev.length; i++) {
  const d = ev[i]!;
  if (d.ev !== 'data' || d.fd !== fd || d.size < MIN_BYTES) continue;
  let j = i + 1;
  while (
    j < ev.length &&
    !(ev[j]!.ev === 'write' && ev[j]!.fd !== fd) &&
    !(ev[j]!.ev === 'data' && ev[j]!.fd === fd)
  )
    j++;
  if (j >= ev.length || ev[j]!.ev !== 'write') continue;
  whole.push(ev[j]!.t - d.t);
  for (let k = i + 1; k <= j; k++) {
    const label = `${ev[k - 1]!.ev} → ${ev[k]!.ev}`;
    const xs = steps.get(label) ?? [];
    xs.push(ev[k]!.t - ev[k - 1]!.t);
    steps.set(label, xs);
  }
}
console.log(
  `the gateway's turn on a pushed end (subscriber fd ${fd}), ${whole.length} ends, µs p50 / mean [times an end]:`,
);
for (const [k, xs] of steps) {
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  console.log(
    `  ${k.padEnd(40)} ${pct(xs, 50).toFixed(1).padStart(8)} ${mean.toFixed(1).padStart(8)} [${(xs.length / whole.length).toFixed(2)}]`,
  );
}
const mean = whole.reduce((s, x) => s + x, 0) / whole.length;
console.log(
  `  ${'all: push data → response write'.padEnd(40)} ${pct(whole, 50).toFixed(1).padStart(8)} ${mean.toFixed(1).padStart(8)}`,
);

// The runner's part: from its `h-endSent` stamp (a local edit's, at the executor's `endSent`) to
// the end's write on its socket (the next write of at least END_BYTES, default 1500).
const END_BYTES = Number(process.env.END_BYTES ?? 1500);
const rev: { t: number; ev: string; fd: number; size: number }[] = [];
for (const f of readdirSync(dir)) {
  if (!/^pickup-hop-runner-\d+\.txt$/.test(f)) continue;
  for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
    const [ns, e, a, b] = line.split(' ');
    if (!ns || !e || e === 'clock') continue;
    rev.push({ t: Number(BigInt(ns)) / 1e3, ev: e, fd: Number(a ?? -1), size: Number(b ?? 0) });
  }
}
rev.sort((x, y) => x.t - y.t);
const rsteps = new Map<string, number[]>();
const rwhole: number[] = [];
for (let i = 0; i < rev.length; i++) {
  if (rev[i]!.ev !== 'h-endSent') continue;
  let j = i + 1;
  while (
    j < rev.length &&
    !(rev[j]!.ev.startsWith('write') && rev[j]!.size >= END_BYTES) &&
    rev[j]!.ev !== 'h-endSent'
  )
    j++;
  if (j >= rev.length || !rev[j]!.ev.startsWith('write')) continue;
  rwhole.push(rev[j]!.t - rev[i]!.t);
  for (let k = i + 1; k <= j; k++) {
    const label = `${rev[k - 1]!.ev} → ${rev[k]!.ev}`;
    const xs = rsteps.get(label) ?? [];
    xs.push(rev[k]!.t - rev[k - 1]!.t);
    rsteps.set(label, xs);
  }
}
if (rwhole.length) {
  console.log(
    `the runner's end, endSent → the end's write, ${rwhole.length} ends, µs p50 / mean [times an end]:`,
  );
  for (const [k, xs] of rsteps) {
    const m = xs.reduce((s, x) => s + x, 0) / xs.length;
    console.log(
      `  ${k.padEnd(40)} ${pct(xs, 50).toFixed(1).padStart(8)} ${m.toFixed(1).padStart(8)} [${(xs.length / rwhole.length).toFixed(2)}]`,
    );
  }
  const m = rwhole.reduce((s, x) => s + x, 0) / rwhole.length;
  console.log(
    `  ${'all: endSent → end written'.padEnd(40)} ${pct(rwhole, 50).toFixed(1).padStart(8)} ${m.toFixed(1).padStart(8)}`,
  );
}
