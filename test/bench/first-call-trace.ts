/**
 * A run's first and last binding call against one inside it, message by message on one clock
 * (round 39, `first-call`): `call-trace.ts`'s cluster, App and `perf record` of syscall tracepoints
 * (CLOCK_MONOTONIC) on every process of the path, while runs of `CALLS` (default 3) sequential calls
 * and the trivial program (with the same connection) go one after another, interleaved. Each
 * call-making run is cut at its sandbox host's writes on fd 1 (its frames to the runner: one a call,
 * then `done`): segment 0 is the submit → the first call frame, segment k the call frame k → the
 * next frame (call k's whole cycle: runner, gateway, claim, App, outcome, back, the program's next
 * call or its end), the last the `done` frame → the response. Every segment's events (writes and
 * Redis's fdatasyncs) in order: p50 of each from the one before it, for the segments whose sequence
 * is the most common one, with each stage's wake-up (its thread back from epoll) and work split.
 * The trivial run's two segments (submit → `done`, `done` → response) beside the first and last.
 *
 *   node test/bench/first-call-trace.ts        (RUNS 30, CALLS 3, WARM 20)
 */
import { execFileSync } from 'node:child_process';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { startPerfRecord, tracedProcesses } from './perf-trace.ts';
import { pingConnection, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 30);
const CALLS = Number(process.env.CALLS ?? 3);
const WARM = Number(process.env.WARM ?? 20);
const OUT = `/tmp/first-call-trace-${process.pid}`;
const EVENTS = [
  'syscalls:sys_enter_write',
  'syscalls:sys_enter_writev',
  'syscalls:sys_exit_fdatasync',
  'syscalls:sys_exit_epoll_wait',
  'syscalls:sys_exit_epoll_pwait',
];
const mono = () => Number(process.hrtime.bigint()) / 1e9;

interface Event {
  t: number;
  who: string;
  ev: string;
  fd: number;
  ret: number;
}
interface Window {
  kind: 'calls' | 'trivial';
  sent: number;
  received: number;
}

const { app, port } = await startPingApp();
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
try {
  const connection = await pingConnection(a, port);
  const run = async (kind: Window['kind']): Promise<Window> => {
    const sent = mono();
    const res = await a(
      'POST',
      '/v1/runs',
      {
        code: kind === 'calls' ? sequentialCalls(CALLS) : 'return 1',
        description: 'First call traced',
        sessionId: 'calls',
        connections: [connection],
      },
      { prefer: 'wait=30' },
    );
    if ((res.body as { status?: string }).status !== 'Completed')
      throw new Error(`run ended ${JSON.stringify(res.body)}`);
    return { kind, sent, received: mono() };
  };
  for (let i = 0; i < WARM; i++) {
    await run('calls');
    await run('trivial');
  }
  const { pids, label } = tracedProcesses();
  const tracer = await startPerfRecord(`${OUT}.data`, pids, EVENTS);
  const windows: Window[] = [];
  for (let i = 0; i < RUNS; i++) {
    windows.push(await run('calls'));
    windows.push(await run('trivial'));
  }
  await new Promise((r) => setTimeout(r, 300));
  if (tracer.exitCode !== null) throw new Error(`perf exited early (${tracer.exitCode})`);
  const exited = new Promise((r) => tracer.once('exit', r));
  tracer.kill('SIGINT');
  await exited;
  const text = execFileSync('perf', ['script', '-i', `${OUT}.data`, '-F', 'pid,tid,time,event,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
  console.log(report(text.split('\n'), windows, label));
  console.log(`perf data: ${OUT}.data`);
} finally {
  await cluster.stop();
  app.close();
}

function report(lines: string[], windows: Window[], label: Map<number, string>): string {
  const events: Event[] = [];
  for (const line of lines) {
    const m = /^\s*(\d+)\/(\d+)\s+(\d+\.\d+):\s+syscalls:([a-z_]+):?\s*(.*)$/.exec(line);
    if (!m) continue;
    const kind = label.get(Number(m[1])) ?? 'host';
    const who = m[1] === m[2] ? kind : `${kind}:thread`;
    const fd = Number.parseInt(/fd: (0x[0-9a-f]+)/.exec(m[5]!)?.[1] ?? '-1', 16);
    events.push({
      t: Number(m[3]),
      who,
      ev: m[4]!.replace(/^sys_(enter|exit)_/, '').replace('writev', 'write'),
      fd,
      ret: Number.parseInt(m[5]!.trim(), 16),
    });
  }
  events.sort((x, y) => x.t - y.t);
  const wakes = new Map<string, number[]>();
  for (const e of events)
    if (/^epoll/.test(e.ev) && e.ret > 0) wakes.set(e.who, [...(wakes.get(e.who) ?? []), e.t]);
  const wokeAt = (who: string, from: number, to: number): number | undefined =>
    (wakes.get(who) ?? []).find((t) => t > from && t < to);
  const stages = events.filter((e) => e.ev === 'write' || e.ev === 'fdatasync');
  const name = (e: Event) => `${e.who} ${e.ev}${e.fd >= 0 ? ` fd${e.fd}` : ''}`;
  const isFrame = (e: Event) => e.who === 'host' && e.ev === 'write' && e.fd === 1;
  // Segments by name: each a list of [start time, events up to and including its end].
  const segments = new Map<string, { from: number; list: Event[] }[]>();
  const add = (key: string, from: number, list: Event[]) =>
    segments.set(key, [...(segments.get(key) ?? []), { from, list }]);
  for (const w of windows) {
    const inRun = stages.filter((e) => e.t >= w.sent && e.t <= w.received);
    const frames = inRun.filter(isFrame);
    const want = w.kind === 'calls' ? CALLS + 1 : 1;
    if (frames.length < want) continue;
    const cuts = [w.sent, ...frames.slice(0, want).map((f) => f.t), w.received];
    for (let k = 0; k < cuts.length - 1; k++) {
      const list = inRun.filter((e) => e.t > cuts[k]! && e.t <= cuts[k + 1]!);
      const key =
        w.kind === 'trivial'
          ? k === 0
            ? 'trivial: submit → done frame'
            : 'trivial: done frame → response'
          : k === 0
            ? 'calls: submit → call 1 frame'
            : k === cuts.length - 2
              ? 'calls: done frame → response'
              : `calls: call ${k} frame → ${k === CALLS ? 'done' : `call ${k + 1}`} frame`;
      add(key, cuts[k]!, list);
    }
  }
  const p50 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const out: string[] = [
    `${RUNS} runs of ${CALLS} sequential calls and ${RUNS} trivial runs, interleaved; µs`,
  ];
  for (const [key, segs] of segments) {
    const whole = segs.map((s) => (s.list.at(-1)!.t - s.from) * 1e6);
    const bySig = new Map<string, typeof segs>();
    for (const s of segs) {
      const sig = s.list.map(name).join('|');
      bySig.set(sig, [...(bySig.get(sig) ?? []), s]);
    }
    const ranked = [...bySig.values()].sort((x, y) => y.length - x.length);
    const modal = ranked[0]!;
    out.push(
      `\n${key}: p50 ${p50(whole).toFixed(0)} (${segs.length} segments; the most common sequence ${modal.length}, next ${ranked
        .slice(1, 3)
        .map((r) => r.length)
        .join(', ')})`,
    );
    // Every segment, whatever its order: each process's own work up to its event (from its thread's
    // last wake-up inside the segment), by the event's name and its occurrence in the segment.
    const work = new Map<string, number[]>();
    for (const s of segs) {
      const seen = new Map<string, number>();
      for (const e of s.list) {
        const k = `${name(e)}#${(seen.get(name(e)) ?? 0) + 1}`;
        seen.set(name(e), (seen.get(name(e)) ?? 0) + 1);
        const list = wakes.get(e.who) ?? [];
        let at: number | undefined;
        for (const t of list) if (t > s.from && t < e.t) at = t;
        if (at !== undefined) work.set(k, [...(work.get(k) ?? []), (e.t - at) * 1e6]);
      }
    }
    out.push(
      `  work (all segments, from the thread's last wake-up): ${[...work]
        .filter(([k, xs]) => xs.length >= segs.length * 0.8 && /^(host|runner|gateway|app) write/.test(k))
        .map(([k, xs]) => `${k} ${p50(xs).toFixed(0)}`)
        .join(', ')}`,
    );
    const n = modal[0]!.list.length;
    for (let i = 0; i < n; i++) {
      const gaps = modal.map((s) => (s.list[i]!.t - (i === 0 ? s.from : s.list[i - 1]!.t)) * 1e6);
      const split = modal.flatMap((s) => {
        const before = i === 0 ? s.from : s.list[i - 1]!.t;
        const at = wokeAt(s.list[i]!.who, before, s.list[i]!.t);
        return at === undefined ? [] : [[(at - before) * 1e6, (s.list[i]!.t - at) * 1e6] as const];
      });
      const parts =
        split.length > modal.length / 2
          ? `wake-up ${p50(split.map((x) => x[0])).toFixed(0)}, work ${p50(split.map((x) => x[1])).toFixed(0)}`
          : '(did not sleep)';
      out.push(`  ${name(modal[0]!.list[i]!).padEnd(28)} ${p50(gaps).toFixed(0).padStart(6)}   ${parts}`);
    }
  }
  return out.join('\n');
}
