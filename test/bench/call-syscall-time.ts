/**
 * `node test/bench/call-syscall-time.ts` (round 42, `binding-floor`): how long each process on a
 * lone binding call's path spends inside its syscalls a call — `perf trace -s` (every syscall's
 * entry and exit, per thread: calls, total, min, avg, max ms) attached to Redis, the gateway, the
 * runner, its sandbox hosts and this process (the App and the client), while `RUNS` (default 10)
 * programs of `CALLS` (default 40) sequential calls run after `WARM` (default 10). Prints, per
 * process, the calls a call and ms a call of `write`/`writev`/`read`/`epoll_wait`/`fdatasync` and
 * of everything. A loopback TCP write runs the receiver's side of the stack and its wake-up in the
 * writer's syscall, so it shows what a message costs its sender. A time: under the bench lock.
 */
import { spawn } from 'node:child_process';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { tracedProcesses } from './perf-trace.ts';
import { pingConnection, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 10);
const CALLS = Number(process.env.CALLS ?? 40);
const WARM = Number(process.env.WARM ?? 10);
const { app, port } = await startPingApp();
const cluster = await startCallCluster();
try {
  const a = api(cluster.url, cluster.devKey);
  const connection = await pingConnection(a, port);
  const program = sequentialCalls(CALLS);
  for (let i = 0; i < WARM; i++) await runWithApp(a, program, connection);
  const { pids, label } = tracedProcesses();
  // Not this process: its own tracing would count the App's and the client's syscalls together
  // with perf's reading of them (left out; the App's side is par-cpu's).
  const traced = pids.filter((p) => p !== process.pid);
  const perf = spawn('perf', ['trace', '-s', '-p', traced.join(',')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  perf.stdout.on('data', (d) => (out += d));
  perf.stderr.on('data', (d) => (out += d));
  await new Promise((r) => setTimeout(r, 2000));
  for (let i = 0; i < RUNS; i++) await runWithApp(a, program, connection);
  const exited = new Promise((r) => perf.on('exit', r));
  perf.kill('SIGINT');
  await exited;
  const calls = RUNS * CALLS;
  // perf trace -s: a block per thread, "<comm> (<tid>), N events" then rows
  // "syscall calls errors total min avg max stddev".
  let who = '';
  const sums = new Map<string, Map<string, { n: number; ms: number }>>();
  for (const line of out.split('\n')) {
    const head = /^\s*(\S.*?) \((\d+)\), \d+ events/.exec(line);
    if (head) {
      const tid = Number(head[2]);
      // Threads of a traced process: name them by the process (their tgid).
      let pid = tid;
      try {
        const status = (await import('node:fs')).readFileSync(`/proc/${tid}/status`, 'utf8');
        pid = Number(/Tgid:\s+(\d+)/.exec(status)?.[1] ?? tid);
      } catch {}
      who = `${label.get(pid) ?? 'other'}${pid === tid ? '' : ` (${head[1]})`}`;
      continue;
    }
    const row = /^\s+(\w+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)/.exec(line);
    if (!row || !who) continue;
    const by = sums.get(who) ?? new Map();
    sums.set(who, by);
    const name = row[1] as string;
    for (const key of [name, 'all']) {
      const s = by.get(key) ?? { n: 0, ms: 0 };
      s.n += Number(row[2]);
      s.ms += Number(row[4]);
      by.set(key, s);
    }
  }
  console.log(`${calls} calls (${RUNS} runs of ${CALLS}); per call: syscalls and µs inside them`);
  for (const [name, by] of [...sums].sort()) {
    const parts = ['all', 'write', 'writev', 'read', 'epoll_wait', 'epoll_pwait', 'fdatasync']
      .filter((k) => by.has(k))
      .map((k) => {
        const s = by.get(k)!;
        return `${k} ${(s.n / calls).toFixed(2)} × ${((s.ms * 1000) / s.n).toFixed(1)} µs`;
      });
    const all = by.get('all')!;
    if (all.n / calls < 0.05) continue;
    console.log(
      `  ${name.padEnd(24)} ${((all.ms * 1000) / calls).toFixed(1).padStart(8)} µs a call: ${parts.join(', ')}`,
    );
  }
} finally {
  await cluster.stop();
  app.close();
}
