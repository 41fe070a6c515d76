/**
 * `node test/bench/tail-stages.ts` (round 36, `tail`): what the slowest 1–2 % of a sequential
 * client's runs wait on, with as little added to the runs as can tell it (`sequential.ts TAIL=1`
 * reads every thread's schedstat around each run and stops Redis at every fsync with strace: its
 * p50 read 6.4 ms where the cluster bench's reads ~3.1). The cluster bench's cluster and its
 * sequential phase (default settings, `WARM` runs first, default 300; each run's stamps read
 * between runs, as the bench does), then `RUNS` (default 5000) runs, and per run, read between
 * runs: its stages (`stageRow`), the sandbox hosts alive (the runner's children; a host's start
 * time from `/proc/<pid>/stat`), and the run-queue wait and on-CPU time of the main threads of the
 * bench, gateway, runner, Redis and hosts (`/proc/<pid>/schedstat`, 5–6 small reads). Beside them:
 * - `NODE_OPTIONS="--import <abs>/test/bench/tail-log.ts"` is set for the cluster by this script
 *   (`TAIL_LOG=0` leaves it out): the gateway's, runner's and bench's V8 collections and long
 *   timers' callbacks on the stamps' clock;
 * - `FSYNC=1` (default; `0` leaves it out): Redis's fdatasyncs from `perf record` of two syscall
 *   tracepoints (in-kernel, a few µs an event), on the monotonic clock, moved onto the wall clock.
 * `DUMP=<file>` writes it all as JSON; `node test/bench/tail-classify.ts <file>` reads a dump again.
 * Counts need no lock; the times in the table only mean something under the bench lock.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRedis, keys } from '@islet/core';
import { benchNow } from './bench-clock.ts';
import { stampedRun, startOneClientCluster } from './cluster-figures.ts';
import { stageRow } from './stages.ts';
import { clusterPids } from './tail-causes.ts';
import { cpuByOwner, type TailDump, tailReport } from './tail-classify.ts';

const RUNS = Number(process.env.RUNS ?? 5000);
const WARM = Number(process.env.WARM ?? 300);
const FSYNC = process.env.FSYNC !== '0';
/** `SCHED=1`: every CPU's switches (`perf record -a -e sched:sched_switch`): who held the CPUs in each run. */
const SCHED = process.env.SCHED === '1';
const SHM = existsSync('/dev/shm') ? '/dev/shm' : '/tmp';
const LOG_DIR = `${SHM}/tail-log-${process.pid}`;
const TAIL_LOG = process.env.TAIL_LOG !== '0';

if (TAIL_LOG) {
  mkdirSync(LOG_DIR, { recursive: true });
  // The cluster's children inherit this process's environment (devstack): set before the start.
  process.env.TAIL_LOG_DIR = LOG_DIR;
  const preload = `--import ${new URL('./tail-log.ts', import.meta.url).pathname}`;
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${preload}`.trim();
  // This process too (it is loaded already: import it).
  await import('./tail-log.ts');
}

const TICK_MS = 10; // USER_HZ 100

/**
 * A process's start on the stamps' clock, ms (10 ms resolution): now minus its age by the boot
 * clock (`/proc/uptime` against its start in ticks). `btime` of /proc/stat is whole seconds: a start
 * read from it was up to 1 s early.
 */
function startedAt(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const uptimeMs = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;
    return benchNow() - (uptimeMs - ticks * TICK_MS);
  } catch {
    return Number.NaN;
  }
}

/** The main thread's on-CPU and run-queue wait, ns. */
function sched(pid: number): [number, number] {
  try {
    const [cpu, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return [cpu ?? 0, wait ?? 0];
  } catch {
    return [0, 0];
  }
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

const cluster = await startOneClientCluster('0.5');
const redis = createRedis(cluster.redisUrl);
let perf: ReturnType<typeof spawn> | undefined;
let perfSched: ReturnType<typeof spawn> | undefined;
const perfOut = `${SHM}/tail-perf-${process.pid}.data`;
const schedOut = `${SHM}/tail-sched-${process.pid}.data`;
const stopPerf = async (p: ReturnType<typeof spawn>) => {
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGINT');
  await exited;
};
try {
  const stamped = stampedRun(cluster, benchNow);
  const once = async () => {
    const run = await stamped();
    const [createdAt, timings] = await redis.hmget(keys.run(run.id), 'createdAt', 'timings');
    return {
      ...run,
      stages: stageRow(run.sent, run.received, createdAt, timings, run.bytesAt, run.writtenAt),
    };
  };
  for (let i = 0; i < WARM; i++) await once();
  const pids = clusterPids();
  const pidOf = (kind: string) => [...pids].find(([, k]) => k === kind)?.[0];
  const runner = pidOf('runner')!;
  const main: [string, number][] = [
    ['bench', process.pid],
    ['gateway', pidOf('gateway')!],
    ['runner', runner],
    ['redis', pidOf('redis')!],
  ];
  const hostStart = new Map<number, number>();
  const hostsNow = () => {
    const hosts = children(runner).filter((p) => {
      if (!hostStart.has(p)) {
        try {
          if (!readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('host')) return false;
        } catch {
          return false;
        }
        hostStart.set(p, startedAt(p));
      }
      return true;
    });
    return hosts;
  };
  const readSched = (hosts: number[]) => {
    const out: Record<string, [number, number]> = {};
    for (const [k, p] of main) out[k] = sched(p);
    const h: [number, number] = [0, 0];
    for (const p of hosts) {
      const [c, w] = sched(p);
      h[0] += c;
      h[1] += w;
    }
    out.host = h;
    return out;
  };
  // Perf stamps on CLOCK_MONOTONIC (hrtime's clock): the offset to the stamps' clock, read now.
  const monoOffsetMs = benchNow() - Number(process.hrtime.bigint()) / 1e6;
  if (FSYNC) {
    perf = spawn(
      'perf',
      [
        'record',
        '-q',
        '-k',
        'mono',
        '-o',
        perfOut,
        '-p',
        String(pidOf('redis')),
        '-e',
        'syscalls:sys_enter_fdatasync',
        '-e',
        'syscalls:sys_exit_fdatasync',
        '-e',
        'syscalls:sys_enter_fsync',
        '-e',
        'syscalls:sys_exit_fsync',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  if (SCHED)
    perfSched = spawn(
      'perf',
      ['record', '-q', '-a', '-k', 'mono', '-o', schedOut, '-e', 'sched:sched_switch'],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
  if (FSYNC || SCHED) await new Promise((r) => setTimeout(r, 1000));
  const runs: TailDump['runs'] = [];
  // The tenant's pending index list (index-create / finish-tenant append to it; an end that finds
  // FOLD_AT entries folds them into the index in its script): its length read between runs, so a
  // run whose end folded is the one after which the list is shorter than before it.
  const pendingKey = keys.indexPending('dev');
  let pending = await redis.llen(pendingKey);
  let hosts = hostsNow();
  // Redis's own periodic work over the runs, counted: AOF rewrites, keys expired, its cron's rate.
  const redisInfo = async () => {
    const info = await redis.info();
    const num = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
    return {
      aofRewrites: num('aof_rewrites'),
      expiredKeys: num('expired_keys'),
      hz: num('hz'),
      aofDelayedFsync: num('aof_delayed_fsync'),
    };
  };
  const infoBefore = await redisInfo();
  const from = benchNow();
  for (let i = 0; i < RUNS; i++) {
    const before = readSched(hosts);
    const run = await once();
    const after = readSched(hosts);
    const d: Record<string, [number, number]> = {};
    for (const k of Object.keys(after)) d[k] = [after[k]![0] - before[k]![0], after[k]![1] - before[k]![1]];
    const pendingAfter = await redis.llen(pendingKey);
    runs.push({
      sent: run.sent,
      received: run.received,
      stages: run.stages,
      sched: d,
      hosts,
      folded: pendingAfter < pending,
    });
    pending = pendingAfter;
    hosts = hostsNow();
  }
  const to = benchNow();
  const infoAfter = await redisInfo();
  console.log(
    `Redis over the runs: AOF rewrites ${infoAfter.aofRewrites - infoBefore.aofRewrites}, keys expired ` +
      `${infoAfter.expiredKeys - infoBefore.expiredKeys}, delayed fsyncs ${infoAfter.aofDelayedFsync - infoBefore.aofDelayedFsync}, ` +
      `hz ${infoAfter.hz} (a cron tick every ${(1000 / infoAfter.hz).toFixed(0)} ms: ~${(((to - from) * infoAfter.hz) / 1000 / RUNS).toFixed(2)} a run)`,
  );
  const fsyncs: TailDump['fsyncs'] = [];
  if (perfSched) {
    await stopPerf(perfSched);
    perfSched = undefined;
    const kindOf = new Map<number, string>([
      [process.pid, 'bench'],
      ...main.map(([k, p]) => [p, k] as [number, string]),
      // `HOST_PIDS=1`: each host by its pid (which one works when), not summed.
      ...[...hostStart.keys()].map(
        (p) => [p, process.env.HOST_PIDS === '1' ? `host-${p}` : 'host'] as [number, string],
      ),
    ]);
    const text = execFileSync('perf', ['script', '-i', schedOut, '-F', 'pid,cpu,time,trace'], {
      maxBuffer: 1 << 30,
    }).toString();
    const spawns = new Map([...hostStart].filter(([, t]) => t >= from - 1000));
    const cpu = cpuByOwner(text, monoOffsetMs, kindOf, runs, spawns);
    for (const [i, r] of runs.entries()) r.cpu = cpu[i]!;
  }
  if (perf) {
    await stopPerf(perf);
    perf = undefined;
    const text = execFileSync('perf', ['script', '-i', perfOut, '-F', 'tid,time,event'], {
      maxBuffer: 1 << 28,
    }).toString();
    const open = new Map<string, number>();
    for (const line of text.split('\n')) {
      const m = /^\s*(\d+)\s+(\d+\.\d+):\s+syscalls:sys_(enter|exit)_f(?:data)?sync/.exec(line);
      if (!m) continue;
      const t = Number(m[2]) * 1000 + monoOffsetMs;
      if (m[3] === 'enter') open.set(m[1]!, t);
      else if (open.has(m[1]!)) {
        const s = open.get(m[1]!)!;
        open.delete(m[1]!);
        if (s >= from && s <= to) fsyncs.push({ t: s, ms: t - s });
      }
    }
  }
  const events: TailDump['events'] = [];
  if (TAIL_LOG) {
    await new Promise((r) => setTimeout(r, 2200)); // every process's 2 s flush
    for (const f of readdirSync(LOG_DIR))
      for (const l of readFileSync(`${LOG_DIR}/${f}`, 'utf8').split('\n'))
        if (l) {
          const e = JSON.parse(l) as TailDump['events'][number];
          if (e.t + e.ms >= from && e.t <= to) events.push(e);
        }
  }
  const dump: TailDump = {
    runs,
    fsyncs,
    events,
    hostStarts: [...hostStart].map(([pid, t]) => ({ pid, t })),
  };
  if (process.env.DUMP) writeFileSync(process.env.DUMP, JSON.stringify(dump));
  for (const line of tailReport(dump)) console.log(line);
} finally {
  if (perf) perf.kill('SIGINT');
  if (perfSched) perfSched.kill('SIGINT');
  redis.disconnect();
  await cluster.stop();
  rmSync(perfOut, { force: true });
  rmSync(schedOut, { force: true });
  if (TAIL_LOG) rmSync(LOG_DIR, { recursive: true, force: true });
}
