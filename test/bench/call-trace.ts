/**
 * Where a sequential binding call's time goes, message by message: `call-cost.ts`'s cluster (1
 * gateway, 1 runner, an instant App in this process), warmed up, then `perf record` of syscall
 * tracepoints (CLOCK_MONOTONIC, a few µs a syscall) on every process of the path (Redis, gateway,
 * runner, sandbox hosts, and this process as the App) while `RUNS` programs of `CALLS` sequential
 * calls run. A call's cycle is cut at the sandbox host's writes of a call frame to its stdout (fd 1,
 * the `call` frame the runner reads); each event of the cycle (a write, Redis's fdatasync) is one
 * stage, timed from the event before it, and named by its process, thread and file descriptor.
 * Cycles whose sequence of stages is the most common one are summed position by position: p50 and
 * mean of each stage, so the breakdown adds up to the cycle (the round trip of one call). Each
 * stage is also split where its thread returned from `epoll` with events: the wake-up (the message
 * in flight, the scheduler waking the thread) and the thread's own work up to its event (round 30,
 * call-lone). Also counts, per call, each process's writes, reads and wake-ups, and Redis's
 * fdatasyncs. Round 42: each stage's wake-ups over 1 ms late, and how many fdatasyncs end just
 * after a 4 ms boundary (a kernel tick).
 *
 *   node test/bench/call-trace.ts                (RUNS 10, CALLS 40)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { startPerfRecord, tracedProcesses } from './perf-trace.ts';
import { pingConnection, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 10);
const CALLS = Number(process.env.CALLS ?? 40);
const WARM = Number(process.env.WARM ?? 15);
const OUT = process.env.OUT ?? `/tmp/call-trace-${process.pid}.txt`;
const EVENTS = [
  'syscalls:sys_enter_write',
  'syscalls:sys_enter_writev',
  'syscalls:sys_exit_read',
  'syscalls:sys_exit_fdatasync',
  'syscalls:sys_exit_epoll_wait',
  'syscalls:sys_exit_epoll_pwait',
];

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

  // By process: a sandbox host started during the trace (the runner's spares) is a host too.
  const { pids, label } = tracedProcesses();
  const tracer = await startPerfRecord(`${OUT}.data`, pids, EVENTS);
  const runs: { sent: number; received: number }[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await run());
  await new Promise((r) => setTimeout(r, 300));
  if (tracer.exitCode !== null) throw new Error(`perf exited early (${tracer.exitCode})`);
  const exited = new Promise((r) => tracer.once('exit', r));
  tracer.kill('SIGINT');
  await exited;
  writeFileSync(
    OUT,
    execFileSync('perf', ['script', '-i', `${OUT}.data`, '-F', 'pid,tid,time,event,trace'], {
      maxBuffer: 1 << 30,
    })
      .toString()
      // `pid/tid time: syscalls:event: args` into `pid tid time event args`
      .replace(/^\s*(\d+)\/(\d+)\s+(\d+\.\d+):\s+syscalls:(\S+):?\s*/gm, '$1 $2 $3 $4 '),
  );
  console.log(report(readFileSync(OUT, 'utf8').split('\n'), runs, label));
  console.log(`full trace: ${OUT}`);
} finally {
  await cluster.stop();
  app.close();
}

interface Event {
  t: number;
  who: string;
  ev: string;
  fd: number;
  ret: number;
}

function report(
  lines: string[],
  runs: { sent: number; received: number }[],
  label: Map<number, string>,
): string {
  const events: Event[] = [];
  for (const line of lines) {
    const m = /^(\d+)\s+(\d+)\s+(\d+\.\d+)\s+(\w+):?\s*(.*)$/.exec(line);
    if (!m) continue;
    const t = Number(m[3]);
    if (!runs.some((r) => t >= r.sent && t <= r.received)) continue;
    const kind = label.get(Number(m[1])) ?? 'host';
    const who = m[1] === m[2] ? kind : `${kind}:thread`;
    const fd = Number.parseInt(/fd: (0x[0-9a-f]+)/.exec(m[5]!)?.[1] ?? '-1', 16);
    const ret = Number.parseInt(m[5]!.trim(), 16);
    events.push({ t, who, ev: m[4]!.replace(/^sys_(enter|exit)_/, ''), fd, ret });
  }
  events.sort((x, y) => x.t - y.t);
  // Counts per call over the traced runs.
  const calls = runs.length * CALLS;
  const counts = new Map<string, number>();
  for (const e of events) {
    const proc = e.who.split(':')[0]!;
    let kind = e.ev;
    if (/^epoll/.test(kind)) {
      if (e.ret === 0) continue;
      kind = 'wake-up';
    }
    if (kind === 'read' && e.ret < 0) kind = 'read(EAGAIN)';
    if (kind === 'writev') kind = 'write';
    counts.set(`${proc} ${kind}`, (counts.get(`${proc} ${kind}`) ?? 0) + 1);
  }
  const out: string[] = [
    `per call (${calls} calls in ${runs.length} runs, the runs' own start and end included): ${[...counts]
      .sort()
      .map(([k, n]) => `${k} ${(n / calls).toFixed(2)}`)
      .join(', ')}`,
  ];
  // Cycles: host call frame → next host call frame; their stages are the writes and fdatasyncs.
  const stageEvents = events.filter((e) => e.ev === 'write' || e.ev === 'writev' || e.ev === 'fdatasync');
  const isCallFrame = (e: Event) => e.who === 'host' && e.fd === 1 && (e.ev === 'write' || e.ev === 'writev');
  const cycles: Event[][] = [];
  let current: Event[] | undefined;
  for (const e of stageEvents) {
    if (isCallFrame(e)) {
      if (current) cycles.push(current);
      current = [e];
    } else current?.push(e);
  }
  const name = (e: Event) => `${e.who} ${e.ev === 'writev' ? 'write' : e.ev}${e.fd >= 0 ? ` fd${e.fd}` : ''}`;
  const bySignature = new Map<string, Event[][]>();
  for (const c of cycles) {
    // A cycle is one call only when it spans less than a run's gap (the last frame of a run has none).
    if (c.length < 4) continue;
    const sig = c.map(name).join('|');
    bySignature.set(sig, [...(bySignature.get(sig) ?? []), c]);
  }
  const ranked = [...bySignature.values()].sort((x, y) => y.length - x.length);
  const modal = ranked[0];
  if (!modal) return `${out.join('\n')}\nno call cycle found`;
  out.push(
    `cycles: ${cycles.length}, the most common sequence: ${modal.length} (next: ${ranked
      .slice(1, 4)
      .map((r) => r.length)
      .join(', ')}), ${modal[0]!.length} stages`,
  );
  const p50 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? Number.NaN;
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / (a.length || 1);
  out.push(
    "stage (the event ending it; from the event before it): p50 / mean, µs; then p50 of its two parts: the wake-up (the event before → the stage's thread back from epoll) and its work (→ the event)",
  );
  // Each thread's returns from epoll with events (its wake-ups), in time order, to split a stage.
  const wakes = new Map<string, number[]>();
  for (const e of events)
    if (/^epoll/.test(e.ev) && e.ret > 0) wakes.set(e.who, [...(wakes.get(e.who) ?? []), e.t]);
  /** The stage's thread's first wake-up after `from` and before `to`, if any (none: it never slept). */
  const wokeAt = (who: string, from: number, to: number): number | undefined => {
    const list = wakes.get(who) ?? [];
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid]! <= from) lo = mid + 1;
      else hi = mid;
    }
    const t = list[lo];
    return t !== undefined && t < to ? t : undefined;
  };
  const n = modal[0]!.length;
  for (let i = 0; i < n; i++) {
    const gaps = modal.map((c) => (i === 0 ? Number.NaN : (c[i]!.t - c[i - 1]!.t) * 1e6));
    if (i === 0) continue;
    const split = modal.flatMap((c) => {
      const at = wokeAt(c[i]!.who, c[i - 1]!.t, c[i]!.t);
      return at === undefined ? [] : [[(at - c[i - 1]!.t) * 1e6, (c[i]!.t - at) * 1e6] as const];
    });
    const parts =
      split.length > modal.length / 2
        ? `   wake-up ${p50(split.map((x) => x[0])).toFixed(0)}, work ${p50(split.map((x) => x[1])).toFixed(0)} (${split.length} woke, ${split.filter((x) => x[0] > 1000).length} of them over 1 ms late)`
        : '   (its thread did not sleep)';
    out.push(
      `  ${name(modal[0]![i]!).padEnd(36)} ${p50(gaps).toFixed(0).padStart(6)} / ${mean(gaps).toFixed(0)}${parts}`,
    );
  }
  const tail = modal.map((c) => {
    const next = cycles.find((d) => d[0]!.t > c[0]!.t);
    return next && next[0]!.t - c.at(-1)!.t < 0.05 ? (next[0]!.t - c.at(-1)!.t) * 1e6 : Number.NaN;
  });
  const tails = tail.filter((x) => !Number.isNaN(x));
  const tailSplit = modal.flatMap((c) => {
    const next = cycles.find((d) => d[0]!.t > c[0]!.t);
    if (!next || next[0]!.t - c.at(-1)!.t >= 0.05) return [];
    const at = wokeAt(next[0]!.who, c.at(-1)!.t, next[0]!.t);
    return at === undefined ? [] : [[(at - c.at(-1)!.t) * 1e6, (next[0]!.t - at) * 1e6] as const];
  });
  out.push(
    `  ${'→ host call frame (next call)'.padEnd(36)} ${p50(tails).toFixed(0).padStart(6)} / ${mean(tails).toFixed(0)}   wake-up ${p50(tailSplit.map((x) => x[0])).toFixed(0)}, work ${p50(tailSplit.map((x) => x[1])).toFixed(0)} (${tailSplit.length} woke)`,
  );
  // The whole cycle of a modal call: its call frame to the next call frame (the next call's).
  const cyc = modal.flatMap((c) => {
    const next = cycles.find((d) => d[0]!.t > c[0]!.t);
    return next && next[0]!.t - c[0]!.t < 0.05 ? [(next[0]!.t - c[0]!.t) * 1e6] : [];
  });
  const sumP50 =
    modal[0]!.slice(1).reduce((s, _e, k) => s + p50(modal.map((c) => (c[k + 1]!.t - c[k]!.t) * 1e6)), 0) +
    p50(tails);
  out.push(
    `whole cycle (call frame to call frame): p50 ${p50(cyc).toFixed(0)} µs, mean ${mean(cyc).toFixed(0)} µs; the stages' p50s add up to ${sumP50.toFixed(0)} µs`,
  );
  // Round 42 (`binding-floor`): where fdatasyncs end on CLOCK_MONOTONIC's 4 ms grid (a kernel tick
  // at HZ=250): evenly spread, 1/16 of them would end in each quarter millisecond.
  const syncs = events.filter((e) => e.ev === 'fdatasync');
  const onTick = syncs.filter((e) => (e.t * 1000) % 4 < 0.25).length;
  out.push(
    `fdatasyncs ending within 0.25 ms after a 4 ms boundary: ${onTick} of ${syncs.length} (${((100 * onTick) / (syncs.length || 1)).toFixed(1)} %, 6.25 % if spread)`,
  );
  return out.join('\n');
}
