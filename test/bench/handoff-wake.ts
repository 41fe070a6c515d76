/**
 * `node test/bench/handoff-wake.ts <trace>` (round 35, `pickup`): where the runner woken by the
 * hand-off waits for a CPU, read from `hop-trace.ts PERF=1 SCHED=1`'s full trace (its last line
 * names the file: `<tid> <s> <event> <args> cpu=<n>`). For each of Redis's first writes after an
 * fsync of a hand-off's size (`MIN_BYTES`–`MAX_BYTES`, default 1,200–2,000) that wakes a thread,
 * the thread woken most often is taken as the runner's main thread; then, per hand-off: whether it
 * was woken onto Redis's own CPU (the waker's), and what it waited behind until it ran — none
 * (it preempted Redis at once), Redis's own turn (the other replies it writes, then its sleep), or
 * another thread (the gateway woken by its reply, a sandbox host) — with the wait, µs.
 */
import { readFileSync } from 'node:fs';
import { pct } from './baselines.ts';

const MIN_BYTES = Number(process.env.MIN_BYTES ?? 1200);
const MAX_BYTES = Number(process.env.MAX_BYTES ?? 2000);
const file = process.argv[2];
if (!file) throw new Error('usage: node test/bench/handoff-wake.ts <hop-trace full trace>');

interface Ev {
  tid: number;
  t: number;
  ev: string;
  args: string;
}
const events: Ev[] = readFileSync(file, 'utf8')
  .split('\n')
  .flatMap((line) => {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(\w+):?\s*(.*)$/.exec(line);
    return m ? [{ tid: Number(m[1]), t: Number(m[2]) * 1e6, ev: m[3] as string, args: m[4] as string }] : [];
  });
const redis = events.find((e) => e.ev === 'sys_enter_fdatasync')?.tid;
const cpuOf = (e: Ev) => Number(/(?:^|\s)cpu=(\d+)\s*$/.exec(e.args)?.[1] ?? -1);

// Each hand-off candidate: Redis's first write after an fsync, of a hand-off's size, and the wake-up it made.
const wakes: { at: number; woken: number; target: number; cpu: number }[] = [];
let synced = false;
let written = -1;
for (let i = 0; i < events.length; i++) {
  const e = events[i] as Ev;
  if (e.tid !== redis) continue;
  if (e.ev === 'sys_exit_fdatasync') {
    synced = true;
    written = -1;
  } else if (synced && /^sys_enter_write/.test(e.ev)) {
    const bytes = Number.parseInt(/count: (0x[0-9a-f]+)/.exec(e.args)?.[1] ?? 'NaN', 16);
    synced = false;
    written = bytes >= MIN_BYTES && bytes <= MAX_BYTES ? i : -1;
  } else if (written >= 0 && e.ev === 'sched_wakeup') {
    const woken = Number(/pid=(\d+)/.exec(e.args)?.[1]);
    const target = Number(/target_cpu=(\d+)/.exec(e.args)?.[1]);
    wakes.push({ at: i, woken, target, cpu: cpuOf(e) });
    written = -1;
  }
}
const byThread = new Map<number, number>();
for (const w of wakes) byThread.set(w.woken, (byThread.get(w.woken) ?? 0) + 1);
const runner = [...byThread].sort((a, b) => b[1] - a[1])[0]?.[0];
const mine = wakes.filter((w) => w.woken === runner);
const waits = new Map<string, number[]>();
const behind: { others: Set<string>; waited: number }[] = [];
for (const w of mine) {
  // Threads other than Redis switched in on the runner's CPU between its wake-up and its turn.
  const others = new Set<string>();
  for (let i = w.at + 1; i < events.length; i++) {
    const e = events[i] as Ev;
    if (e.ev !== 'sched_switch' || cpuOf(e) !== w.target) continue;
    const next = /next_comm=(\S+) next_pid=(\d+)/.exec(e.args);
    if (Number(next?.[2]) !== runner) {
      if (Number(next?.[2]) !== redis && Number(next?.[2]) !== 0) others.add(`${next?.[1]}/${next?.[2]}`);
      continue;
    }
    const prev = /prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+)/.exec(e.args);
    const waited = e.t - (events[w.at] as Ev).t;
    if (others.size > 0) behind.push({ others, waited });
    else {
      const kind =
        Number(prev?.[1]) === redis && prev?.[2] === 'R'
          ? 'at once (preempted Redis)'
          : "behind Redis's own rest (its other replies, its sleep)";
      waits.set(kind, [...(waits.get(kind) ?? []), waited]);
    }
    break;
  }
}
// The thread most often ahead of the runner (the gateway, woken by its reply): its own row.
const seen = new Map<string, number>();
for (const b of behind) for (const o of b.others) seen.set(o, (seen.get(o) ?? 0) + 1);
const usual = [...seen].sort((x, y) => y[1] - x[1])[0]?.[0] ?? '';
for (const b of behind) {
  const kind =
    b.others.size === 1 && b.others.has(usual)
      ? `behind one other thread's turn (${usual}: the gateway's reply)`
      : 'behind other threads (hosts, kernel workers, …; the gateway with them or not)';
  waits.set(kind, [...(waits.get(kind) ?? []), b.waited]);
}
const all = [...waits.values()].flat();
console.log(
  `hand-offs found: ${mine.length} (runner's main thread ${runner}); woken onto Redis's own CPU: ${mine.filter((w) => w.target === w.cpu).length}`,
);
console.log(
  `woken → on a CPU, all: p50 ${pct(all, 50).toFixed(0)} µs, mean ${(all.reduce((a, b) => a + b, 0) / (all.length || 1)).toFixed(0)}`,
);
for (const [kind, w] of waits)
  console.log(
    `  ${kind.padEnd(56)} ${String(w.length).padStart(4)}  p50 ${pct(w, 50).toFixed(0).padStart(5)} µs  mean ${(w.reduce((a, b) => a + b, 0) / w.length).toFixed(0).padStart(5)}`,
  );
