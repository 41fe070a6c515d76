/**
 * A run of `CALLS` (default 100) parallel binding calls laid out by who holds the box's CPUs
 * (round 43, `par-layout`): par-timeline.ts's cluster and App (this process), warmed up, then a
 * system-wide `perf record -a -e sched:sched_switch` (CLOCK_MONOTONIC) while `RUNS` (default 8)
 * runs go one after another, plus the writes of every process on the path (the phase marks). For
 * each run, from its submit to its answer: each process kind's time on a CPU (main thread and its
 * other threads apart), the time the box's CPUs were all busy, the time a CPU ran something not
 * ours (the other tenants of the box), and a strip of `BIN_US` (default 1000) µs bins saying who
 * held the CPUs in each bin (the letters below; `.` idle). The marks: the runner's first write to
 * the gateway after the submit (the `call-batch`), the App's first and last answers written, the
 * gateway's last write to the runner (the batch's last answer lines), Redis's fsyncs.
 *
 *   node test/bench/par-layout.ts            (RUNS 8, CALLS 100, BIN_US 1000)
 *
 * Letters: g gateway, r runner, h a sandbox host, R redis, a the App (this process), o other.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { api } from '../e2e/helpers.ts';
import { parallelCalls } from './baselines.ts';
import { startPerfRecord, tracedProcesses } from './perf-trace.ts';
import { pingConnection, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 8);
const CALLS = Number(process.env.CALLS ?? 100);
const BIN_US = Number(process.env.BIN_US ?? 1000);
const OUT = `/tmp/par-layout-${process.pid}`;
const LETTER: Record<string, string> = {
  gateway: 'g',
  runner: 'r',
  host: 'h',
  redis: 'R',
  app: 'a',
  other: 'o',
};

const { app, port } = await startPingApp();
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
const mono = () => Number(process.hrtime.bigint()) / 1e9;

/** Every thread id of the traced processes, by its process's kind ('<kind>' main, '<kind>:t' others). */
function threadKinds(label: Map<number, string>): Map<number, string> {
  const out = new Map<number, string>();
  for (const [pid, kind] of label) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const t of tids) out.set(Number(t), Number(t) === pid ? kind : `${kind}:t`);
  }
  return out;
}

try {
  const connection = await pingConnection(a, port);
  const program = parallelCalls(CALLS);
  const run = async () => {
    const sent = mono();
    const res = await a(
      'POST',
      '/v1/runs',
      {
        code: program,
        description: 'Parallel calls laid out',
        sessionId: 'calls',
        connections: [connection],
      },
      { prefer: 'wait=30' },
    );
    if ((res.body as { status?: string }).status !== 'Completed')
      throw new Error(`run ended ${JSON.stringify(res.body)}`);
    return { sent, received: mono() };
  };
  for (let i = 0; i < Number(process.env.WARM ?? 40); i++) await run();
  const { pids, label } = tracedProcesses();
  // The sched_switch events system-wide (who runs on each CPU), the writes of our processes only.
  const tracerA = spawn(
    'perf',
    ['record', '-q', '-a', '-k', 'mono', '-o', `${OUT}.sched`, '-e', 'sched:sched_switch'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const tracerB = await startPerfRecord(`${OUT}.writes`, pids, [
    'syscalls:sys_enter_write',
    'syscalls:sys_enter_writev',
    'syscalls:sys_exit_fdatasync',
  ]);
  const runs: { sent: number; received: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    runs.push(await run());
    await new Promise((r) => setTimeout(r, 20));
  }
  const kinds = threadKinds(label);
  writeFileSync(`${OUT}.json`, JSON.stringify({ runs, kinds: [...kinds] }));
  await new Promise((r) => setTimeout(r, 300));
  for (const t of [tracerA, tracerB]) {
    const exited = new Promise((r) => t.once('exit', r));
    t.kill('SIGINT');
    await exited;
  }
  const kindOf = (tid: number, comm: string): string =>
    tid === 0 ? 'idle' : (kinds.get(tid) ?? (comm.startsWith('redis') ? 'redis' : 'other'));
  // Per CPU, the stretches each thread ran: [cpu, from, to, kind].
  const text = execFileSync('perf', ['script', '-i', `${OUT}.sched`, '-F', 'cpu,time,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
  const stretches: { cpu: number; from: number; to: number; kind: string }[] = [];
  const current = new Map<number, { since: number; kind: string }>();
  for (const line of text.split('\n')) {
    const m =
      /^\s*\[(\d+)\]\s+(\d+\.\d+):\s+prev_comm=(.*?) prev_pid=(\d+) .*next_comm=(.*?) next_pid=(\d+)/.exec(
        line,
      );
    if (!m) continue;
    const cpu = Number(m[1]);
    const t = Number(m[2]);
    const prev = current.get(cpu) ?? { since: t, kind: kindOf(Number(m[4]), m[3]!) };
    stretches.push({ cpu, from: prev.since, to: t, kind: prev.kind });
    current.set(cpu, { since: t, kind: kindOf(Number(m[6]), m[5]!) });
  }
  const cpus = new Set(stretches.map((s) => s.cpu)).size;
  const wtext = execFileSync('perf', ['script', '-i', `${OUT}.writes`, '-F', 'pid,tid,time,event,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
  const writes: { t: number; who: string; ev: string; fd: number }[] = [];
  for (const line of wtext.split('\n')) {
    const m = /^\s*(\d+)\/(\d+)\s+(\d+\.\d+):\s+syscalls:(\S+):?\s*(.*)$/.exec(line);
    if (!m) continue;
    const fd = Number.parseInt(/fd: (0x[0-9a-f]+)/.exec(m[5]!)?.[1] ?? '-1', 16);
    writes.push({
      t: Number(m[3]),
      who: label.get(Number(m[1])) ?? 'host',
      ev: m[4]!.replace(/^sys_(enter|exit)_/, '').replace(/:$/, ''),
      fd,
    });
  }
  writes.sort((x, y) => x.t - y.t);
  const total = new Map<string, number>();
  let totalMs = 0;
  for (const [n, r] of runs.entries()) {
    const ms = (r.received - r.sent) * 1e3;
    totalMs += ms;
    const on = new Map<string, number>();
    const bins = Math.ceil((ms * 1000) / BIN_US);
    const strip: Map<string, number>[] = Array.from({ length: bins }, () => new Map());
    for (const s of stretches) {
      const from = Math.max(s.from, r.sent);
      const to = Math.min(s.to, r.received);
      if (to <= from || s.kind === 'idle') continue;
      on.set(s.kind, (on.get(s.kind) ?? 0) + (to - from) * 1e3);
      total.set(s.kind, (total.get(s.kind) ?? 0) + (to - from) * 1e3);
      // Spread the stretch over its bins, in whole µs from the submit (no float steps to loop on).
      const k = s.kind.replace(':t', '');
      const f = Math.round((from - r.sent) * 1e6);
      const e = Math.round((to - r.sent) * 1e6);
      for (let t = f; t < e; ) {
        const b = Math.floor(t / BIN_US);
        const end = Math.min(e, (b + 1) * BIN_US);
        strip[b]?.set(k, (strip[b]?.get(k) ?? 0) + (end - t));
        t = end;
      }
    }
    // Both CPUs busy: the sum of busy time over the bins, against cpus × bin.
    const busy = strip.map((m) => [...m.values()].reduce((x, y) => x + y, 0) / (BIN_US * cpus));
    const full = busy.filter((b) => b > 0.9).length;
    const row = strip
      .map((m) => {
        const top = [...m].sort((x, y) => y[1] - x[1]).filter(([, us]) => us > BIN_US * 0.25);
        return top.length === 0
          ? '.'
          : top
              .map(([k]) => LETTER[k] ?? '?')
              .join('')
              .slice(0, 2)
              .padEnd(2, ' ');
      })
      .map((c) => c.padEnd(2, ' '))
      .join('|');
    const inRun = writes.filter((w) => w.t >= r.sent && w.t <= r.received);
    const at = (w?: { t: number }) => (w ? ((w.t - r.sent) * 1e3).toFixed(1) : '-');
    const runnerToGw = inRun.filter((w) => w.who === 'runner');
    const appW = inRun.filter((w) => w.who === 'app' && w.ev !== 'fdatasync');
    const gw = inRun.filter((w) => w.who === 'gateway');
    const fsyncs = inRun.filter((w) => w.ev === 'fdatasync').map((w) => at(w));
    // After the App's last answer: the outcome groups', the end's and the answer's fsyncs in series.
    const lastApp = appW.at(-1)?.t ?? r.received;
    const fsyncsAfter = inRun.filter((w) => w.ev === 'fdatasync' && w.t > lastApp).length;
    console.log(
      `run ${n + 1}: ${ms.toFixed(1)} ms; on a CPU, ms: ${[...on]
        .sort((x, y) => y[1] - x[1])
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')}; bins with every CPU busy ${full} of ${bins}`,
    );
    console.log(
      `  marks (ms): runner writes ${runnerToGw.length} (first ${at(runnerToGw[0])}); App writes ${appW.length} (${at(appW[1])} → ${at(appW.at(-1))}); ` +
        `gateway's last write ${at(gw.at(-1))}; fsyncs at ${fsyncs.join(' ')} (${fsyncsAfter} after the App's last answer, ` +
        `${((r.received - lastApp) * 1e3).toFixed(1)} ms from it to the run's answer)`,
    );
    console.log(`  ${row}`);
  }
  console.log(
    `mean of ${RUNS} runs (${(totalMs / RUNS).toFixed(1)} ms), on a CPU a run, ms: ${[...total]
      .sort((x, y) => y[1] - x[1])
      .map(([k, v]) => `${k} ${(v / RUNS).toFixed(2)}`)
      .join(', ')}; CPUs ${cpus}`,
  );
  console.log(`perf data: ${OUT}.sched, ${OUT}.writes`);
} finally {
  await cluster.stop();
  app.close();
}
