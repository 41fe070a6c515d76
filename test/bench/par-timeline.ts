/**
 * A run of `CALLS` (default 100) parallel binding calls laid out in time, process by process
 * (round 39, `call-path`): `call-cost.ts`'s cluster and App, warmed up, then `perf record` of the
 * write and fdatasync syscalls (CLOCK_MONOTONIC) of every process on the path while `RUNS`
 * (default 5) such runs go one after another. For each run, from its submit: each process's
 * stretches of writes (a stretch ends where the process wrote nothing for `GAP_US`, default 300
 * µs), with its first and last write, their count and the file descriptors written; Redis's
 * fdatasyncs apart. Where one process's stretch waits on another's shows where the calls queue.
 *
 *   node test/bench/par-timeline.ts          (RUNS 5, CALLS 100, GAP_US 300)
 *   CALLS=0 node test/bench/par-timeline.ts  (the trivial program, with the same connection)
 *   SEQ=1 CALLS=20 node test/bench/par-timeline.ts (sequential calls)
 */
import { execFileSync } from 'node:child_process';
import { api } from '../e2e/helpers.ts';
import { parallelCalls, sequentialCalls } from './baselines.ts';
import { startPerfRecord, tracedProcesses } from './perf-trace.ts';
import { pingConnection, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 5);
const CALLS = Number(process.env.CALLS ?? 100);
const GAP_US = Number(process.env.GAP_US ?? 300);
const OUT = `/tmp/par-timeline-${process.pid}`;

const { app, port } = await startPingApp();
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
const mono = () => Number(process.hrtime.bigint()) / 1e9;
try {
  const connection = await pingConnection(a, port);
  // `CALLS=0`: the trivial program, submitted with the same connection (round 39 `call-end`: a
  // call-making run's ends against a trivial run's, on the same clock).
  // `SEQ=1`: sequential calls instead of one `Promise.all`.
  const program =
    CALLS === 0 ? 'return 1' : process.env.SEQ === '1' ? sequentialCalls(CALLS) : parallelCalls(CALLS);
  const run = async () => {
    const sent = mono();
    const res = await a(
      'POST',
      '/v1/runs',
      { code: program, description: 'Parallel calls in time', sessionId: 'calls', connections: [connection] },
      { prefer: 'wait=30' },
    );
    if ((res.body as { status?: string }).status !== 'Completed')
      throw new Error(`run ended ${JSON.stringify(res.body)}`);
    return { sent, received: mono() };
  };
  for (let i = 0; i < 20; i++) await run();
  const { pids, label } = tracedProcesses();
  const tracer = await startPerfRecord(`${OUT}.data`, pids, [
    'syscalls:sys_enter_write',
    'syscalls:sys_enter_writev',
    'syscalls:sys_exit_fdatasync',
    // `EXTRA_EVENTS` (comma-separated, e.g. sched:sched_switch): recorded too, for `perf script`
    // on the kept data file (the timeline reads the syscalls only).
    ...(process.env.EXTRA_EVENTS ?? '').split(',').filter(Boolean),
  ]);
  const runs: { sent: number; received: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    runs.push(await run());
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 300));
  const exited = new Promise((r) => tracer.once('exit', r));
  tracer.kill('SIGINT');
  await exited;
  console.log(`perf data: ${OUT}.data`);
  const text = execFileSync('perf', ['script', '-i', `${OUT}.data`, '-F', 'pid,tid,time,event,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
  const events: { t: number; who: string; ev: string; fd: number }[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\/(\d+)\s+(\d+\.\d+):\s+syscalls:(\S+):?\s*(.*)$/.exec(line);
    if (!m) continue;
    const kind = label.get(Number(m[1])) ?? 'host';
    const who = m[1] === m[2] ? kind : `${kind}:thread`;
    const fd = Number.parseInt(/fd: (0x[0-9a-f]+)/.exec(m[5]!)?.[1] ?? '-1', 16);
    events.push({ t: Number(m[3]), who, ev: m[4]!.replace(/^sys_(enter|exit)_/, ''), fd });
  }
  events.sort((x, y) => x.t - y.t);
  for (const [n, r] of runs.entries()) {
    const inRun = events.filter((e) => e.t >= r.sent && e.t <= r.received);
    console.log(`run ${n + 1}: ${((r.received - r.sent) * 1e3).toFixed(2)} ms`);
    // Stretches by process: writes of one process with no gap of GAP_US between them.
    const open = new Map<string, { from: number; to: number; count: number; fds: Map<number, number> }>();
    const rows: string[] = [];
    const close = (who: string) => {
      const s = open.get(who);
      if (!s) return;
      open.delete(who);
      const fds = [...s.fds].map(([fd, c]) => `fd${fd}×${c}`).join(' ');
      rows.push(
        `${((s.from - r.sent) * 1e3).toFixed(2).padStart(7)} → ${((s.to - r.sent) * 1e3).toFixed(2).padStart(7)} ms  ${who.padEnd(16)} ${String(s.count).padStart(4)}  ${fds}`,
      );
    };
    for (const e of inRun) {
      const who = e.ev === 'fdatasync' ? `${e.who} fsync` : e.who;
      const s = open.get(who);
      if (s && (e.t - s.to) * 1e6 > GAP_US) close(who);
      const cur = open.get(who) ?? { from: e.t, to: e.t, count: 0, fds: new Map<number, number>() };
      cur.to = e.t;
      cur.count++;
      cur.fds.set(e.fd, (cur.fds.get(e.fd) ?? 0) + 1);
      open.set(who, cur);
    }
    for (const who of [...open.keys()]) close(who);
    rows.sort((x, y) => Number.parseFloat(x) - Number.parseFloat(y));
    for (const row of rows) console.log(`  ${row}`);
  }
} finally {
  await cluster.stop();
  app.close();
}
