/**
 * Where a lone binding call's wake-ups go (round 36, `call-hops`): `call-trace.ts`'s cycle (the
 * sandbox host's `call` frame to the next, cut at each process's write and Redis's fdatasync), with
 * the scheduler's own events beside it (`sched:sched_wakeup`, `sched:sched_switch`, every CPU). Each
 * stage's wake-up (the message written → its reader back from epoll) is split into
 *   - flight: the write's entry → the reader's `sched_wakeup` (the kernel delivering the message),
 *   - queue: `sched_wakeup` → the reader switched in, by what that CPU ran when it was woken: idle
 *     (the CPU left its idle state), the writer itself (woken onto the writer's CPU, it waits for
 *     the writer to go idle or be preempted), or another process,
 *   - resume: switched in → back from epoll,
 * and the stage's work (back from epoll → its write) is checked for time off the CPU (preempted).
 * Also the writer's tail: its write → it switched out (what it still ran after the message left).
 *
 *   RUNS=10 CALLS=40 node test/bench/call-sched.ts
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { tracedProcesses } from './perf-trace.ts';
import { pingConnection, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 10);
const CALLS = Number(process.env.CALLS ?? 40);
const WARM = Number(process.env.WARM ?? 15);
const OUT = process.env.OUT ?? `/tmp/call-sched-${process.pid}`;
const SYSCALLS = [
  'syscalls:sys_enter_write',
  'syscalls:sys_enter_writev',
  'syscalls:sys_exit_fdatasync',
  'syscalls:sys_exit_epoll_wait',
  'syscalls:sys_exit_epoll_pwait',
];
const SCHED = ['sched:sched_wakeup', 'sched:sched_switch'];

let text = '';
const label = new Map<number, string>([[process.pid, 'app']]);
const spans: { sent: number; received: number }[] = [];
const REUSE = process.env.REUSE;
if (REUSE) {
  // Read a trace made before (`OUT` of that run) again: its labels and spans are in `<OUT>.json`.
  const saved = JSON.parse(readFileSync(`${REUSE}.json`, 'utf8')) as {
    label: [number, string][];
    spans: typeof spans;
  };
  label.clear();
  for (const [k, v] of saved.label) label.set(k, v);
  spans.push(...saved.spans);
  text = readFileSync(`${REUSE}.txt`, 'utf8');
} else await trace();

async function trace(): Promise<void> {
  const { app, port } = await startPingApp();
  const cluster = await startCallCluster();
  const a = api(cluster.url, cluster.devKey);
  try {
    const connection = await pingConnection(a, port);
    const program = sequentialCalls(CALLS);
    const run = async () => {
      const sent = Number(process.hrtime.bigint()) / 1e9;
      const res = await a(
        'POST',
        '/v1/runs',
        { code: program, description: 'Trace binding calls', sessionId: 'calls', connections: [connection] },
        { prefer: 'wait=30' },
      );
      if ((res.body as { status?: string }).status !== 'Completed')
        throw new Error(`run ended ${JSON.stringify(res.body)}`);
      return { sent, received: Number(process.hrtime.bigint()) / 1e9 };
    };
    for (let i = 0; i < WARM; i++) await run();
    const traced = tracedProcesses();
    const pids = traced.pids;
    for (const [pid, kind] of traced.label) label.set(pid, kind);
    const record = (file: string, target: string[], events: string[]) =>
      spawn(
        'perf',
        ['record', '-q', '-k', 'mono', '-o', file, ...target, ...events.flatMap((e) => ['-e', e])],
        {
          stdio: ['ignore', 'ignore', 'inherit'],
        },
      );
    const tracers = [
      record(`${OUT}.sys.data`, ['-p', pids.join(',')], SYSCALLS),
      record(`${OUT}.sched.data`, ['-a'], SCHED),
    ];
    await new Promise((r) => setTimeout(r, 1500));
    for (let i = 0; i < RUNS; i++) spans.push(await run());
    await new Promise((r) => setTimeout(r, 300));
    for (const t of tracers) {
      if (t.exitCode !== null) throw new Error(`perf exited early (${t.exitCode})`);
      const exited = new Promise((r) => t.once('exit', r));
      t.kill('SIGINT');
      await exited;
    }
    for (const f of ['sys', 'sched'])
      text += execFileSync(
        'perf',
        ['script', '-i', `${OUT}.${f}.data`, '-F', 'pid,tid,cpu,time,event,trace'],
        {
          maxBuffer: 1 << 30,
        },
      ).toString();
  } finally {
    await cluster.stop();
    app.close();
  }

  writeFileSync(`${OUT}.txt`, text);
  writeFileSync(`${OUT}.json`, JSON.stringify({ label: [...label], spans }));
}
// Hosts started during the trace (spares) are hosts too; any other node child of ours as well.
const kindOf = (pid: number) => label.get(pid) ?? (pid === 0 ? 'idle' : 'other');

interface Ev {
  t: number;
  pid: number;
  tid: number;
  cpu: number;
  ev: string;
  fd: number;
  ret: number;
  /** sched_wakeup: the woken thread and its CPU; sched_switch: prev and next threads. */
  woken?: number;
  target?: number;
  prev?: number;
  next?: number;
  /** sched_switch: the previous thread was preempted (runnable), not put to sleep. */
  preempted?: boolean;
}
const inSpan = (t: number) => spans.some((r) => t >= r.sent - 0.01 && t <= r.received + 0.01);
const events: Ev[] = [];
for (const line of text.split('\n')) {
  // "  pid/tid [cpu] time: subsystem:event: args"
  const m = /^\s*(\d+)\/(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\w+):(\w+):?\s*(.*)$/.exec(line);
  if (!m) continue;
  const t = Number(m[4]);
  if (!inSpan(t)) continue;
  const args = m[7]!;
  const e: Ev = {
    t,
    pid: Number(m[1]),
    tid: Number(m[2]),
    cpu: Number(m[3]),
    ev: m[6]!.replace(/^sys_(enter|exit)_/, ''),
    fd: Number.parseInt(/fd: (0x[0-9a-f]+)/.exec(args)?.[1] ?? '-1', 16),
    ret: Number.parseInt(args.trim(), 16),
  };
  if (e.ev === 'sched_wakeup') {
    e.woken = Number(/ pid=(\d+)/.exec(args)?.[1] ?? -1);
    e.target = Number(/target_cpu=(\d+)/.exec(args)?.[1] ?? -1);
  } else if (e.ev === 'sched_switch') {
    e.prev = Number(/prev_pid=(\d+)/.exec(args)?.[1] ?? -1);
    e.next = Number(/next_pid=(\d+)/.exec(args)?.[1] ?? -1);
    e.preempted = /prev_state=R/.test(args);
  }
  events.push(e);
}
events.sort((x, y) => x.t - y.t);

const who = (e: Ev) => `${kindOf(e.pid)}${e.pid === e.tid ? '' : ':thread'}`;
const isWrite = (e: Ev) => e.ev === 'write' || e.ev === 'writev';
const stageEvents = events.filter((e) => (isWrite(e) || e.ev === 'fdatasync') && label.has(e.pid));
const isCallFrame = (e: Ev) => e.pid === e.tid && kindOf(e.pid) === 'host' && e.fd === 1 && isWrite(e);
const cycles: Ev[][] = [];
let current: Ev[] | undefined;
for (const e of stageEvents) {
  if (isCallFrame(e)) {
    if (current) cycles.push(current);
    current = [e];
  } else current?.push(e);
}
const name = (e: Ev) => `${who(e)} ${isWrite(e) ? 'write' : e.ev}${e.fd >= 0 ? ` fd${e.fd}` : ''}`;
const bySig = new Map<string, Ev[][]>();
for (const c of cycles) {
  if (c.length < 4) continue;
  const sig = c.map(name).join('|');
  bySig.set(sig, [...(bySig.get(sig) ?? []), c]);
}
const modal = [...bySig.values()].sort((x, y) => y.length - x.length)[0];
if (!modal) throw new Error('no call cycle found');

// Per thread, in time order: wake-ups of it, switches in and out of it, its returns from epoll.
const wakeups = new Map<number, Ev[]>();
const switchIns = new Map<number, Ev[]>();
const switchOuts = new Map<number, Ev[]>();
const epollBack = new Map<number, Ev[]>();
const push = (m: Map<number, Ev[]>, k: number, e: Ev) => {
  const l = m.get(k);
  if (l) l.push(e);
  else m.set(k, [e]);
};
for (const e of events) {
  if (e.ev === 'sched_wakeup' && e.woken !== undefined) push(wakeups, e.woken, e);
  else if (e.ev === 'sched_switch') {
    if (e.next !== undefined) push(switchIns, e.next, e);
    if (e.prev !== undefined) push(switchOuts, e.prev, e);
  } else if (/^epoll/.test(e.ev) && e.ret > 0) push(epollBack, e.tid, e);
}
/** The first of `list` after `from` (and before `to`). */
const firstAfter = (list: Ev[] | undefined, from: number, to = Number.POSITIVE_INFINITY): Ev | undefined => {
  if (!list) return undefined;
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.t <= from) lo = mid + 1;
    else hi = mid;
  }
  const e = list[lo];
  return e !== undefined && e.t < to ? e : undefined;
};
/** The switch on `cpu` just before `t`: what that CPU ran at `t` (its `next`). */
const sched = events.filter((e) => e.ev === 'sched_switch');
const lastSwitchOn = new Map<number, Ev[]>();
for (const e of sched) push(lastSwitchOn, e.cpu, e);
const runningOn = (cpu: number, t: number): number | undefined => {
  const list = lastSwitchOn.get(cpu) ?? [];
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.t <= t) lo = mid + 1;
    else hi = mid;
  }
  return list[lo - 1]?.next;
};

const p50 = (a: number[]) =>
  a.length ? [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]! : Number.NaN;
const f = (x: number) => (Number.isNaN(x) ? '–' : x.toFixed(0));
console.log(
  `cycles: ${cycles.length}, the most common sequence: ${modal.length}, ${modal[0]!.length} stages; µs p50s (n)`,
);
console.log(
  'stage (ends at)                wake-up = flight  queue: idle CPU (n) | behind writer (n) | behind other (n, who)   resume  work  off-CPU in work (n>0)  writer tail',
);
const n = modal[0]!.length;
const rows: [string, (c: Ev[]) => [Ev, Ev] | undefined][] = [];
for (let i = 1; i < n; i++) rows.push([name(modal[0]![i]!), (c) => [c[i - 1]!, c[i]!]]);
rows.push([
  '→ host call frame (next)',
  (c) => {
    const next = cycles.find((d) => d[0]!.t > c[0]!.t);
    return next && next[0]!.t - c.at(-1)!.t < 0.05 ? [c.at(-1)!, next[0]!] : undefined;
  },
]);
for (const [label2, pick] of rows) {
  const flight: number[] = [];
  const qIdle: number[] = [];
  const qWriter: number[] = [];
  const qOther: number[] = [];
  const others = new Map<string, number>();
  const resume: number[] = [];
  const work: number[] = [];
  const off: number[] = [];
  const tail: number[] = [];
  const whole: number[] = [];
  let preempted = 0;
  for (const c of modal) {
    const pair = pick(c);
    if (!pair) continue;
    const [from, to] = pair;
    const back = firstAfter(epollBack.get(to.tid), from.t, to.t);
    // The writer's tail: its write → it switched out.
    const out = firstAfter(switchOuts.get(from.tid), from.t);
    if (out && from.ev !== 'fdatasync') {
      tail.push((out.t - from.t) * 1e6);
      if (out.preempted) preempted++;
    }
    if (!back) continue; // the stage's thread never slept (Redis's reply after its fsync)
    whole.push((back.t - from.t) * 1e6);
    const wake = firstAfter(wakeups.get(to.tid), from.t, back.t);
    const inn = wake ? firstAfter(switchIns.get(to.tid), wake.t, back.t) : undefined;
    if (!wake || !inn) continue;
    flight.push((wake.t - from.t) * 1e6);
    const q = (inn.t - wake.t) * 1e6;
    const was = runningOn(inn.cpu, wake.t);
    if (was === 0 || was === undefined) qIdle.push(q);
    else if (was === from.tid) qWriter.push(q);
    else {
      qOther.push(q);
      const k = kindOf(was);
      others.set(k, (others.get(k) ?? 0) + 1);
    }
    resume.push((back.t - inn.t) * 1e6);
    work.push((to.t - back.t) * 1e6);
    // Time off the CPU between epoll's return and the write (preempted, or a blocking call).
    let offUs = 0;
    for (
      let s = firstAfter(switchOuts.get(to.tid), back.t, to.t);
      s;
      s = firstAfter(switchOuts.get(to.tid), s.t, to.t)
    ) {
      const again = firstAfter(switchIns.get(to.tid), s.t, to.t);
      offUs += ((again?.t ?? to.t) - s.t) * 1e6;
    }
    if (offUs > 0) off.push(offUs);
  }
  const who2 = [...others]
    .sort((x, y) => y[1] - x[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  console.log(
    `${label2.padEnd(30)} ${f(p50(whole)).padStart(5)} = ${f(p50(flight)).padStart(3)}  ${f(p50(qIdle))} (${qIdle.length}) | ${f(p50(qWriter))} (${qWriter.length}) | ${f(p50(qOther))} (${qOther.length}${who2 ? `: ${who2}` : ''})   ${f(p50(resume))}  ${f(p50(work))}  ${f(p50(off))} (${off.length})  ${f(p50(tail))} (preempted ${preempted})`,
  );
}
const cyc = modal.flatMap((c) => {
  const next = cycles.find((d) => d[0]!.t > c[0]!.t);
  return next && next[0]!.t - c[0]!.t < 0.05 ? [(next[0]!.t - c[0]!.t) * 1e6] : [];
});
console.log(`whole cycle p50 ${f(p50(cyc))} µs`);
console.log(`traces: ${OUT}.sys.data, ${OUT}.sched.data`);
if (process.env.DUMP) {
  // One stage's raw events, for a few cycles: everything on either CPU from the write to the reader's epoll return.
  const i = Number(process.env.DUMP);
  for (const c of modal.slice(20, 26)) {
    const from = c[i - 1]!;
    const to = c[i]!;
    console.log(`--- ${name(from)} → ${name(to)}`);
    for (const e of events) {
      if (e.t < from.t - 20e-6 || e.t > to.t) continue;
      const what =
        e.ev === 'sched_wakeup'
          ? `wakeup ${kindOf(e.woken ?? -1)}/${e.woken} → cpu${e.target}`
          : e.ev === 'sched_switch'
            ? `switch ${kindOf(e.prev ?? -1)}/${e.prev}${e.preempted ? ' (preempted)' : ''} → ${kindOf(e.next ?? -1)}/${e.next}`
            : `${e.ev} fd${e.fd} ret${e.ret}`;
      console.log(
        `${((e.t - from.t) * 1e6).toFixed(1).padStart(8)} cpu${e.cpu} ${kindOf(e.pid)}/${e.tid} ${what}`,
      );
    }
  }
}
