/**
 * A sequential trivial run's two notification hops laid out by who holds the box's CPUs (round 44,
 * `seq-layout`; par-layout.ts's method on one client): the one-client cluster (sequential.ts's,
 * `BENCH_TENANT_SHARE` default 0.5 as the cluster bench runs it), `WARM` runs, then a system-wide
 * `perf record` of `sched_switch`/`sched_wakeup` and our threads' write, read, epoll and fdatasync
 * syscalls while `RUNS` more go one after another. Each hop is followed as a baton passed between
 * processes on one clock (CLOCK_MONOTONIC; the stage stamps brought over by this process's
 * wall/monotonic offset):
 *
 *   pick-up: enqueued (gateway JS) → the gateway's write → Redis (the submit's script) → fdatasync →
 *            Redis's write the runner reads → the runner's `pickedUp`
 *   end:     endSent (runner JS) → the runner's write → Redis (the end's script) → fdatasync →
 *            Redis's push the gateway reads → the gateway's response write → the client's first bytes
 *
 * Each segment's holder's main thread is classed, µs by µs, as: (a) `fsync` (inside Redis's
 * fdatasync, its completion's wake included), (b) `wake` (runnable after a wake-up, until on a CPU:
 * `wake-idle` when its CPU was idle at the wake — a halted vCPU's exit on this VM — `wake-busy` when
 * another thread held it), (c) `cpu` (its own work), `preempt` (runnable after being switched out),
 * (d) `sleep` (blocked, not in an fsync: a wait in series the path made itself — another message,
 * a timer). Printed: each class's p50 and mean per segment and per hop, the syscalls each process
 * made inside each hop (epoll waits that returned no event are timers), fsyncs per hop, and the
 * timeline of the median run of each hop (`SHOW` more runs, `SHOW_SLOW` the slowest too).
 *
 *   flock /work/wt/bench.lock bash scripts/toolchain.sh env RUNS=300 node test/bench/seq-layout.ts
 *   node test/bench/seq-layout.ts <OUT>        re-read a kept trace (<OUT>.data, <OUT>.json)
 *   SLICE_NS=100000 …   the path's main threads ask for a 0.1 ms slice first (gcc -O2 -o
 *                       /tmp/sched-slice test/bench/sched-slice.c; SLICE_TOOL names another path)
 *   HOST_SLICE_NS=100000 …   the sandbox hosts' main threads ask for it instead
 *   HOST_POLICY=idle|batch|nice:<n> …   every sandbox host thread put in that class (needs chrt/renice)
 *   SPLIT_CPUS=1 …                       every Redis thread pinned to CPU 0, every host thread to CPU 1
 *   BURST=4 …                            runs from 4 clients before the warm-up (several hosts a partition)
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRedis, keys } from '@islet/core';
import { benchNow } from './bench-clock.ts';
import { burst, stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { clusterThreads } from './cluster-threads.ts';
import { analyse, type Hop, type Meta } from './seq-layout-read.ts';
import { stampsOf } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 300);
const WARM = Number(process.env.WARM ?? 400);
const SYSCALLS = [
  'sys_enter_write',
  'sys_enter_writev',
  'sys_enter_read',
  'sys_exit_read',
  'sys_enter_epoll_wait',
  'sys_exit_epoll_wait',
  'sys_enter_epoll_pwait',
  'sys_exit_epoll_pwait',
  'sys_enter_epoll_pwait2',
  'sys_exit_epoll_pwait2',
  'sys_enter_fdatasync',
  'sys_exit_fdatasync',
].map((e) => `syscalls:${e}`);

const reread = process.argv[2];
if (reread) {
  const meta = JSON.parse(readFileSync(`${reread}.json`, 'utf8')) as Meta;
  console.log(analyse(perfText(`${reread}.data`), meta));
} else {
  const OUT = `${existsSync('/dev/shm') ? '/dev/shm' : '/tmp'}/seq-layout-${process.pid}`;
  const cluster = await startOneClientCluster('0.5', JSON.parse(process.env.BENCH_ENV ?? '{}'));
  const mono = () => Number(process.hrtime.bigint()) / 1e9;
  try {
    const once = stampedRun(cluster, mono);
    // BURST=<clients> (round 47, `premake`): runs from that many clients first, so the tenant's
    // partition holds several sandbox hosts, as after the cluster bench's 16-client phase (with one
    // host, engine.ts `holdsNext` never holds a make: nothing else is ready).
    const clients = Number(process.env.BURST ?? 0);
    if (clients > 1) await burst(async () => void (await once()), 50 * clients, clients);
    for (let i = 0; i < WARM; i++) await once();
    const label: [number, string][] = clusterThreads().map((t) => [
      t.tid,
      t.main ? t.kind : `${t.kind}:${t.comm}`,
    ]);
    const mainOf = (kind: string) => label.find(([, l]) => l === kind)?.[0];
    const mains = {
      gateway: mainOf('gateway'),
      redis: mainOf('redis'),
      runner: mainOf('runner'),
      client: process.pid,
    };
    if (Object.values(mains).some((t) => t === undefined))
      throw new Error(`threads: ${JSON.stringify(mains)}`);
    // SLICE_NS: the path's main threads (gateway, Redis, runner; not the hosts, not this client) ask
    // EEVDF for a shorter slice, so that woken they may preempt a thread protected by run-to-parity.
    if (process.env.SLICE_NS)
      execFileSync(process.env.SLICE_TOOL ?? '/tmp/sched-slice', [
        process.env.SLICE_NS,
        String(mains.gateway),
        String(mains.redis),
        String(mains.runner),
      ]);
    // HOST_SLICE_NS: the sandbox hosts' main threads (their next isolate's make holds a CPU ~1–2.5 ms)
    // ask for a shorter slice instead, so that a woken path thread waits at most about that long.
    const hostMains = label.filter(([, l]) => l === 'host').map(([tid]) => String(tid));
    if (process.env.HOST_SLICE_NS && hostMains.length)
      execFileSync(process.env.SLICE_TOOL ?? '/tmp/sched-slice', [process.env.HOST_SLICE_NS, ...hostMains]);
    // HOST_POLICY (round 45, `host-nice`): every thread of every sandbox host put in a scheduling
    // class from outside (`idle`, `batch`: chrt; `nice:<n>`: renice, thread by thread), to see where
    // a host's make's waits go before the product does it at spawn.
    const policy = process.env.HOST_POLICY;
    if (policy) {
      const hostTids = label
        .filter(([, l]) => l === 'host' || l.startsWith('host:'))
        .map(([tid]) => String(tid));
      for (const tid of hostTids) {
        if (policy === 'idle' || policy === 'batch')
          execFileSync('chrt', [policy === 'idle' ? '-i' : '-b', '-p', '0', tid]);
        else if (policy.startsWith('nice:'))
          execFileSync('renice', ['-n', policy.slice(5), '-p', tid], { stdio: 'ignore' });
        else throw new Error(`HOST_POLICY ${policy}: idle, batch or nice:<n>`);
      }
      console.log(`HOST_POLICY ${policy}: ${hostTids.length} host threads`);
    }
    // SPLIT_CPUS (round 46, `seq-attr`): Redis's threads on CPU 0 and the hosts' on CPU 1 (taskset,
    // after the warm-up), as when Redis is a pod of its own on other cores: whether Redis's wake-ups
    // inside its fdatasync (~3.7 disk waits an fsync on this box) still wait behind a host's make.
    if (process.env.SPLIT_CPUS === '1') {
      const pin = (cpu: string, tids: string[]) => {
        for (const tid of tids) execFileSync('taskset', ['-p', '-c', cpu, tid], { stdio: 'ignore' });
        return tids.length;
      };
      const redisTids = label
        .filter(([, l]) => l === 'redis' || l.startsWith('redis:'))
        .map(([t]) => String(t));
      const hostTids = label.filter(([, l]) => l === 'host' || l.startsWith('host:')).map(([t]) => String(t));
      console.log(
        `SPLIT_CPUS: ${pin('0', redisTids)} Redis threads on CPU 0, ${pin('1', hostTids)} host threads on CPU 1`,
      );
    }
    const onlyMains = Object.values(mains)
      .map((tid) => `common_pid == ${tid}`)
      .join(' || ');
    const args = [
      '-e',
      'sched:sched_switch',
      '-e',
      'sched:sched_wakeup',
      '-e',
      'sched:sched_waking',
      ...SYSCALLS.flatMap((e) => ['-e', e, '--filter', onlyMains]),
    ];
    const perf = spawn('perf', ['record', '-q', '-a', '-k', 'mono', '-o', `${OUT}.data`, ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await new Promise((r) => setTimeout(r, 1500));
    const runs: { sent: number; received: number; bytesAt: number; id: string }[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await once());
    await new Promise((r) => setTimeout(r, 200));
    if (perf.exitCode !== null) throw new Error(`perf exited early (${perf.exitCode})`);
    const exited = new Promise((r) => perf.once('exit', r));
    perf.kill('SIGINT');
    await exited;
    const redis = createRedis(cluster.redisUrl);
    const offsetS = benchNow() / 1000 - mono();
    const hops: Hop[] = await Promise.all(
      runs.map(async (r) => {
        const t = stampsOf(await redis.hget(keys.run(r.id), 'timings'));
        const m = (k: string) => (t[k] === undefined ? Number.NaN : t[k]! / 1000 - offsetS);
        return {
          enqueued: m('enqueued'),
          pickedUp: m('pickedUp'),
          endSent: m('endSent'),
          bytesAt: r.bytesAt,
        };
      }),
    );
    redis.disconnect();
    const meta: Meta = { label, mains: mains as Meta['mains'], hops };
    writeFileSync(`${OUT}.json`, JSON.stringify(meta));
    console.log(analyse(perfText(`${OUT}.data`), meta));
    console.log(`perf data: ${OUT}.data (meta ${OUT}.json; re-read: node test/bench/seq-layout.ts ${OUT})`);
  } finally {
    await cluster.stop();
  }
}

function perfText(file: string): string {
  return execFileSync('perf', ['script', '-i', file, '-F', 'tid,cpu,time,event,trace'], {
    maxBuffer: 1 << 30,
  }).toString();
}
