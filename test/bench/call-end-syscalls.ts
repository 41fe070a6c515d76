/**
 * `node test/bench/call-end-syscalls.ts` (round 39, `call-end`): syscalls a run by process (perf's
 * syscall tracepoints, counted with `perf stat`), `RUNS` runs (default 100) of each of: the trivial
 * program with the App's connection, and `CALLS` sequential calls (default 1). Counts: no lock.
 * `EVENTS`: the tracepoints (default connect, accept4, write, read, fdatasync, epoll_wait).
 * `PAR=1` (round 46, `par-calls`): the `CALLS` calls made together (one `Promise.all`), as the
 * "100 parallel calls" row's program, not one after another.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { api } from '../e2e/helpers.ts';
import { parallelCalls, sequentialCalls } from './baselines.ts';
import { processTree } from './capacity-cpu.ts';
import { pingConnection, processKind, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 100);
const CALLS = Number(process.env.CALLS ?? 1);
const PAR = process.env.PAR === '1';
const EVENTS = (process.env.EVENTS ?? 'connect,accept4,write,writev,read,fdatasync,epoll_wait').split(',');
const { app, port } = await startPingApp();
const cluster = await startCallCluster();
const a = api(cluster.url, cluster.devKey);
try {
  const connection = await pingConnection(a, port);
  const run = async (code: string) => {
    await runWithApp(a, code, connection);
  };
  for (const [name, code] of [
    ['trivial', 'return 1'],
    PAR ? [`${CALLS} parallel call(s)`, parallelCalls(CALLS)] : [`${CALLS} call(s)`, sequentialCalls(CALLS)],
  ] as const) {
    for (let i = 0; i < 20; i++) await run(code);
    const kinds = new Map<number, string>();
    for (const pid of processTree(process.pid).slice(1)) {
      try {
        const kind = processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
        if (kind && kind !== 'host') kinds.set(pid, kind);
      } catch {}
    }
    const pids = [...kinds.keys()];
    const out = `/tmp/call-end-syscalls-${process.pid}.txt`;
    const stat = spawn(
      'perf',
      [
        'stat',
        '-x',
        ',',
        '--per-thread',
        '-o',
        out,
        '-p',
        pids.join(','),
        ...EVENTS.flatMap((e) => ['-e', `syscalls:sys_enter_${e}`]),
      ],
      { stdio: 'ignore' },
    );
    await new Promise((r) => setTimeout(r, 800));
    for (let i = 0; i < RUNS; i++) await run(code);
    const exited = new Promise((r) => stat.once('exit', r));
    stat.kill('SIGINT');
    await exited;
    const totals = new Map<string, number>();
    for (const line of readFileSync(out, 'utf8').split('\n')) {
      const f = line.split(',');
      const m = /-(\d+)$/.exec(f[0] ?? '');
      if (!m || f.length < 4) continue;
      const kind = kinds.get(Number(m[1])) ?? 'thread';
      const ev = (f[3] ?? '').replace('syscalls:sys_enter_', '');
      totals.set(`${kind} ${ev}`, (totals.get(`${kind} ${ev}`) ?? 0) + Number(f[1]));
    }
    console.log(`${name}, a run (${RUNS} runs; main threads):`);
    console.log(
      `  ${[...totals]
        .filter(([, v]) => v > 0)
        .sort()
        .map(([k, v]) => `${k} ${(v / RUNS).toFixed(2)}`)
        .join(', ')}`,
    );
    execFileSync('rm', ['-f', out]);
  }
} finally {
  await cluster.stop();
  app.close();
}
