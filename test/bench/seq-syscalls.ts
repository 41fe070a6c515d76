/**
 * `node test/bench/seq-syscalls.ts` (round 46, `seq-attr`): what a one-client sequential trivial
 * run (`Prefer: wait`, the cluster bench's share 0.5) costs each process of its path by COUNT —
 * every thread's voluntary and involuntary context switches (`/proc/<pid>/task/<tid>/status`: a
 * voluntary one is a sleep, so one wake-up), then, in a second pass, every syscall a run
 * (`strace -c -f` attached to the gateway, Redis, the runner and each sandbox host). `WARM` runs
 * (default 150) before, `RUNS` (default 400) measured each pass. Counts: read at any load, no lock.
 * Redis's commands a run (`INFO commandstats`, scripts' own included) over the first pass too.
 * `STRACE=0` skips the second pass. `SLEEPS=1` adds a third: each main thread's voluntary switches
 * (`perf record -e sched:sched_switch -g` on its tid, prev_state not R) a run by where in the kernel
 * it went to sleep (the first frame of its kernel stack that names the wait: epoll, the fsync's
 * writeback (`folio_wait_writeback`), its metadata buffers' (`fsync_buffers_list`, ext4 without a
 * journal), its inode (`ext4_write_inode`: the size an append changed) or the disk cache's flush (`wait_for_completion_io_timeout`), a futex…).
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { processTree, redisPids } from './capacity-cpu.ts';
import { burst, commandStats, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 400);
// WARM + 2 × RUNS stays under a host's 1000 runs (maxRunsPerProcess): no host is replaced in the
// passes (a replacement's start would be counted in the runner's row: strace -f follows it).
const WARM = Number(process.env.WARM ?? 150);
const STRACE = process.env.STRACE !== '0';

const cluster = await startOneClientCluster('0.5');
const gateway = cluster.gateways[0]?.pid as number;
const runner = cluster.runners[0]?.pid as number;
const redis = redisPids([Number(new URL(cluster.redisUrl).port)])
  .values()
  .next().value as number;

/** Each thread of `pid`: name → [voluntary, involuntary] switches (threads of one name summed). */
function switches(pid: number): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const name = `${tid === String(pid) ? 'main' : (/^Name:\s*(.*)$/m.exec(s)?.[1] ?? '?')}`;
      const v = Number(/voluntary_ctxt_switches:\s*(\d+)/.exec(s)?.[1]);
      const n = Number(/nonvoluntary_ctxt_switches:\s*(\d+)/.exec(s)?.[1]);
      const was = out.get(name) ?? [0, 0];
      out.set(name, [was[0] + v, was[1] + n]);
    } catch {
      // gone
    }
  }
  return out;
}

const hosts = () => processTree(runner).filter((p) => p !== runner);
const who = (): [string, number][] => [
  ['gateway', gateway],
  ['redis', redis],
  ['runner', runner],
  ...hosts().map((p, i): [string, number] => [`host${i}`, p]),
];

const admin = createRedis(cluster.redisUrl);
try {
  const once = trivialRun(cluster, 'Seq syscalls');
  await burst(once, WARM, 1);
  await new Promise((r) => setTimeout(r, 300));
  const procs = who();
  const before = new Map(procs.map(([k, p]) => [k, switches(p)]));
  const c0 = commandStats(await admin.info('commandstats'));
  await burst(once, RUNS, 1);
  const c1 = commandStats(await admin.info('commandstats'));
  // This probe's own INFO is one of them.
  const cmds = [...c1]
    .map(([k, v]) => [k, (v - (c0.get(k) ?? 0) - (k === 'info' ? 1 : 0)) / RUNS] as const)
    .filter(([, v]) => v >= 0.01)
    .sort((a, b) => b[1] - a[1]);
  const allCmds = cmds.reduce((s, [, v]) => s + v, 0);
  console.log(
    `Redis commands a run: ${allCmds.toFixed(2)}: ${cmds.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`,
  );
  console.log(`context switches a run over ${RUNS} one-client runs after ${WARM} (voluntary / involuntary):`);
  for (const [k, p] of procs) {
    const b = before.get(k) as Map<string, [number, number]>;
    const parts: string[] = [];
    for (const [name, [v, n]] of switches(p)) {
      const [v0, n0] = b.get(name) ?? [0, 0];
      const dv = (v - v0) / RUNS;
      const dn = (n - n0) / RUNS;
      if (dv >= 0.005 || dn >= 0.005) parts.push(`${name} ${dv.toFixed(2)}/${dn.toFixed(2)}`);
    }
    console.log(`  ${k.padEnd(8)} ${parts.join(', ')}`);
  }
  if (STRACE) {
    const tracers = who().map(([k, p]) => {
      const out = join(tmpdir(), `seq-syscalls-${process.pid}-${k}.txt`);
      const child = spawn('strace', ['-c', '-f', '-qq', '-o', out, '-p', String(p)], { stdio: 'ignore' });
      const exited = new Promise((r) => child.once('exit', r));
      return { k, out, child, exited };
    });
    await new Promise((r) => setTimeout(r, 1000));
    await burst(once, RUNS, 1);
    for (const t of tracers) t.child.kill('SIGINT');
    await Promise.all(tracers.map((t) => t.exited));
    console.log(`syscalls a run under strace -c -f, ${RUNS} runs:`);
    for (const t of tracers) {
      const rows = readFileSync(t.out, 'utf8')
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((f) => f.length >= 5 && /^\d/.test(f[0] ?? '') && f.at(-1) !== 'total');
      const parts = rows
        .map((f) => {
          const name = f.at(-1) as string;
          // % time, seconds, usecs/call, calls, [errors,] syscall
          const calls = Number(f[3]);
          return [name, calls / RUNS] as const;
        })
        .filter(([, c]) => c >= 0.01)
        .sort((a, b) => b[1] - a[1]);
      const total = parts.reduce((s, [, c]) => s + c, 0);
      console.log(
        `  ${t.k.padEnd(8)} ${total.toFixed(2)}: ${parts.map(([n, c]) => `${n} ${c.toFixed(2)}`).join(', ')}`,
      );
    }
  }
  if (process.env.SLEEPS === '1') {
    const out = join(tmpdir(), `seq-sleeps-${process.pid}.data`);
    const procs2 = who();
    const perf = spawn(
      'perf',
      ['record', '-q', '-e', 'sched:sched_switch', '-g', '-o', out, '-t', procs2.map(([, p]) => p).join(',')],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const exited = new Promise((r) => perf.once('exit', r));
    await new Promise((r) => setTimeout(r, 1500));
    await burst(once, RUNS, 1);
    perf.kill('SIGINT');
    await exited;
    const text = execFileSync('perf', ['script', '-i', out, '-F', 'tid,event,trace,ip,sym'], {
      maxBuffer: 1 << 30,
    }).toString();
    rmSync(out, { force: true });
    const nameOf = new Map(procs2.map(([k, p]) => [p, k]));
    const by = new Map<string, number>();
    for (const block of text.split('\n\n')) {
      const head = /^\s*(\d+)\s+sched:sched_switch:.*prev_state=(\S+)/.exec(block);
      if (!head || head[2] === 'R' || head[2] === 'R+') continue;
      const frames = block
        .split('\n')
        .slice(1)
        .map((l) => l.trim().split(/\s+/)[1] ?? '');
      const where =
        frames.find((f) =>
          /^(do_epoll_wait|futex_wait|jbd2_log_wait_commit|folio_wait_writeback|fsync_buffers_list|ext4_write_inode|wait_for_completion_io_timeout|blkdev_issue_flush|submit_bio_wait|pipe_read|pipe_write|unix_stream_read|tcp_recvmsg|do_nanosleep|rwsem_down\w+|mutex_lock\w*|do_sys_poll|__x64_sys_\w+)$/.test(
            f,
          ),
        ) ?? frames.slice(0, 3).join('<');
      const key = `${nameOf.get(Number(head[1])) ?? head[1]} ${where}`;
      by.set(key, (by.get(key) ?? 0) + 1);
    }
    console.log(`main threads' sleeps a run by where, ${RUNS} runs (perf sched_switch -g):`);
    for (const [k, v] of [...by].sort())
      if (v / RUNS >= 0.01) console.log(`  ${k.padEnd(60)} ${(v / RUNS).toFixed(2)}`);
  }
} finally {
  admin.disconnect();
  await cluster.stop();
}
