/**
 * `node test/bench/seq-count.ts` (round 48, `seq-count`): the one-client sequential path COUNTED,
 * for an ABBA of two commits' `services/` (`bash test/bench/ab.sh <base> 1 "node test/bench/seq-count.ts"`):
 * round 47's head read the one-client p50 higher than its base in 4 of 4 timed pairs, and this says
 * which count a run moved. The cluster bench's one-client cluster (share 0.5), `WARM` runs (default
 * 150), then `RUNS` runs (default 300) in each pass:
 *  1. plain: Redis's `INFO commandstats` a run (scripts' own commands included), each process's
 *     voluntary / involuntary switches a run (main thread and the rest apart) and its run-delay a run
 *     (`/proc/<pid>/task/<tid>/schedstat` field 2: time runnable and not on a CPU — the load's, read
 *     as context only) and CPU a run (field 1);
 *  2. MONITOR: every command Redis executed a run by who sent it (a client or a script), its name and
 *     its first key with ids cut (`…:handoff:<id>` → `handoff:*`), and the path each run took: handed
 *     (a push on a worker's hand-off key inside the submit's script) or queued; of the handed, taken
 *     by the worker's own pop or by its `TAKE_BACK` (an EVAL of the take-back script on its key after
 *     a pop that brought nothing); the liveness check (`PUBSUB NUMSUB` inside the script); the order
 *     of a handed submit's writes;
 *  3. `STRACE=1` (default): `strace -c -f` attached to ONE process at a time (gateway, Redis, runner,
 *     the hosts together), a pass each: syscalls a run by name.
 * Counts, not times: read at any load, no lock. Event-loop calls (`setImmediate`, `setTimeout`, …):
 * `PROCESS=gateway|runner node test/bench/loop-counts.ts`.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { processTree, redisPids } from './capacity-cpu.ts';
import { burst, commandStats, startOneClientCluster, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 300);
// WARM + 2 × RUNS + 4 strace passes … a host is replaced after 1000 runs (maxRunsPerProcess); with
// the defaults 150 + 300 × 6 = 1950 over the runner's hosts (share 0.5: two hosts take turns).
const WARM = Number(process.env.WARM ?? 150);
const STRACE = process.env.STRACE !== '0';
const PASSES = Number(process.env.PASSES ?? 1);

// LIVE=on|off: the gateway's hand-off liveness check (default: the release's own default).
const cluster = await startOneClientCluster(
  '0.5',
  process.env.LIVE ? { ISLET_HANDOFF_LIVE_CHECK: process.env.LIVE } : {},
);
const gateway = cluster.gateways[0]?.pid as number;
const runner = cluster.runners[0]?.pid as number;
const redis = redisPids([Number(new URL(cluster.redisUrl).port)])
  .values()
  .next().value as number;
const hosts = () => processTree(runner).filter((p) => p !== runner);

interface Thread {
  vol: number;
  invol: number;
  cpuNs: number;
  delayNs: number;
}
/** Each of `pid`'s threads by tid (main marked), read from /proc. */
function threads(pid: number): Map<string, Thread> {
  const out = new Map<string, Thread>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const [cpu, delay] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ');
      out.set(tid === String(pid) ? 'main' : tid, {
        vol: Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(s)?.[1]),
        invol: Number(/^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(s)?.[1]),
        cpuNs: Number(cpu),
        delayNs: Number(delay),
      });
    } catch {
      // gone
    }
  }
  return out;
}
type Snap = Map<string, Map<string, Thread>>;
/** Bytes and read/write-family syscalls `pid` made so far (/proc/<pid>/io: sockets and pipes too). */
function io(pid: number): number[] {
  try {
    const s = readFileSync(`/proc/${pid}/io`, 'utf8');
    return ['rchar', 'wchar', 'syscr', 'syscw'].map((k) =>
      Number(new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(s)?.[1]),
    );
  } catch {
    return [0, 0, 0, 0];
  }
}
type IoSnap = Map<string, number[]>;
function ioSnap(): IoSnap {
  const out: IoSnap = new Map();
  for (const [k, pids] of procs()) for (const p of pids) out.set(`${k}/${p}`, io(p));
  return out;
}
function printIo(a: IoSnap, b: IoSnap): void {
  const sums = new Map<string, number[]>();
  for (const [kp, v] of b) {
    const w = a.get(kp);
    if (!w) continue;
    const k = kp.split('/')[0] as string;
    const s = sums.get(k) ?? [0, 0, 0, 0];
    sums.set(
      k,
      s.map((x, i) => x + (v[i] ?? 0) - (w[i] ?? 0)),
    );
  }
  console.log('bytes read / written and read / write syscalls a run (/proc/<pid>/io):');
  for (const [k, [rc, wc, sr, sw]] of sums)
    console.log(
      `  ${k.padEnd(8)} ${((rc ?? 0) / RUNS).toFixed(0)} / ${((wc ?? 0) / RUNS).toFixed(0)} B; ${((sr ?? 0) / RUNS).toFixed(2)} / ${((sw ?? 0) / RUNS).toFixed(2)}`,
    );
}
/** Redis's network bytes in / out so far (INFO stats). */
async function net(): Promise<number[]> {
  const s = await admin.info('stats');
  return ['total_net_input_bytes', 'total_net_output_bytes'].map((k) =>
    Number(new RegExp(`^${k}:(\\d+)`, 'm').exec(s)?.[1]),
  );
}
const procs = (): [string, number[]][] => [
  ['gateway', [gateway]],
  ['redis', [redis]],
  ['runner', [runner]],
  ['hosts', hosts()],
];
function snap(): Snap {
  const out: Snap = new Map();
  for (const [k, pids] of procs())
    for (const p of pids)
      for (const [t, v] of threads(p)) (out.get(k) ?? out.set(k, new Map()).get(k))?.set(`${p}/${t}`, v);
  return out;
}
function printSnap(a: Snap, b: Snap): void {
  console.log(
    `a run over ${RUNS} one-client runs after ${WARM}: voluntary / involuntary switches (main thread; other threads), run-delay µs, CPU µs (whole process):`,
  );
  for (const [k, tb] of b) {
    const ta = a.get(k) ?? new Map<string, Thread>();
    const sum = { mv: 0, mi: 0, ov: 0, oi: 0, cpu: 0, delay: 0, mdelay: 0 };
    for (const [t, v] of tb) {
      const w = ta.get(t) ?? { vol: 0, invol: 0, cpuNs: 0, delayNs: 0 };
      const main = t.endsWith('/main');
      if (main) {
        sum.mv += v.vol - w.vol;
        sum.mi += v.invol - w.invol;
        sum.mdelay += v.delayNs - w.delayNs;
      } else {
        sum.ov += v.vol - w.vol;
        sum.oi += v.invol - w.invol;
      }
      sum.cpu += v.cpuNs - w.cpuNs;
      sum.delay += v.delayNs - w.delayNs;
    }
    const r = (n: number) => (n / RUNS).toFixed(2);
    const us = (n: number) => (n / RUNS / 1000).toFixed(0);
    console.log(
      `  ${k.padEnd(8)} main ${r(sum.mv)} / ${r(sum.mi)}; others ${r(sum.ov)} / ${r(sum.oi)}; run-delay ${us(sum.delay)} (main ${us(sum.mdelay)}); CPU ${us(sum.cpu)}`,
    );
  }
}

const admin = createRedis(cluster.redisUrl);
const once = trivialRun(cluster, 'Seq count');
const settle = () => new Promise((r) => setTimeout(r, 300));
try {
  await burst(once, WARM, 1);
  await settle();

  // 1. plain (`PASSES` of them, default 1)
  for (let pass = 0; pass < PASSES; pass++) {
    const s0 = snap();
    const i0 = ioSnap();
    const n0 = await net();
    const c0 = commandStats(await admin.info('commandstats'));
    await burst(once, RUNS, 1);
    const c1 = commandStats(await admin.info('commandstats'));
    const n1 = await net();
    const i1 = ioSnap();
    const s1 = snap();
    const cmds = [...c1]
      .map(([k, v]) => [k, (v - (c0.get(k) ?? 0) - (k === 'info' ? 1 : 0)) / RUNS] as const)
      .filter(([, v]) => v >= 0.01)
      .sort((a, b) => b[1] - a[1]);
    console.log(
      `Redis commands a run: ${cmds.reduce((s, [, v]) => s + v, 0).toFixed(2)}: ${cmds.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`,
    );
    printSnap(s0, s1);
    printIo(i0, i1);
    // (the probe's own INFO calls are in these: the same on every side)
    console.log(
      `Redis network bytes a run, in / out: ${(((n1[0] ?? 0) - (n0[0] ?? 0)) / RUNS).toFixed(0)} / ${(((n1[1] ?? 0) - (n0[1] ?? 0)) / RUNS).toFixed(0)}`,
    );
  }

  // 2. MONITOR (`MONITOR=0`: skipped)
  if (process.env.MONITOR !== '0') {
    const watcher = createRedis(cluster.redisUrl);
    const monitor = await watcher.monitor();
    const by = new Map<string, number>();
    let handed = 0;
    let numsub = 0;
    let takeBacks = 0;
    let takenBack = 0;
    let handPops = 0;
    /** Per worker key: a push not yet popped (so the next take-back took it). */
    const pending = new Set<string>();
    const orders = new Map<string, number>();
    let script: string[] = [];
    const cut = (key: string) =>
      key
        .replace(/^islet:\{[^}]*\}:/, '')
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
        .replace(/\d+/g, '#');
    const isHand = (k: string | undefined) => /:handoff:[^:]+$/.test(k ?? '');
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const cmd = (args[0] ?? '').toLowerCase();
      const lua = source === 'lua';
      const key = cmd === 'eval' || cmd === 'evalsha' ? (args[3] ?? '') : (args[1] ?? '');
      const name = `${lua ? 'lua   ' : 'client'} ${cmd} ${cut(key)}`;
      by.set(name, (by.get(name) ?? 0) + 1);
      if (lua) script.push(`${cmd} ${cut(args[1] ?? '')}`);
      else {
        if (script.some((s) => s.startsWith('zadd handoff:'))) {
          const o = script.filter((s) => /^(pubsub|zadd|lpush|hdel|rpush|publish)/.test(s)).join(' | ');
          orders.set(o, (orders.get(o) ?? 0) + 1);
        }
        script = [];
      }
      if (lua && cmd === 'pubsub') numsub++;
      if (lua && cmd === 'zadd' && isHand(args[1])) {
        handed++;
        pending.add(args[1] as string);
      }
      if (!lua && cmd === 'bzpopmin' && isHand(args[1])) {
        handPops++;
        // a push landed while no pop was blocked on this key: popped now (served at once) — count as pop
        pending.delete(args[1] as string);
      }
      if (!lua && cmd === 'eval' && args.length === 7 && isHand(args[5])) {
        takeBacks++;
        if (pending.delete(args[5] as string)) takenBack++;
      }
    });
    await settle();
    by.clear();
    orders.clear();
    handed = numsub = takeBacks = takenBack = handPops = 0;
    await burst(once, RUNS, 1);
    await settle();
    monitor.disconnect();
    watcher.disconnect();
    console.log(
      `path a run (MONITOR, ${RUNS} runs): handed ${(handed / RUNS).toFixed(3)} (taken by TAKE_BACK ${(takenBack / RUNS).toFixed(3)}, so by the worker's own pop ${((handed - takenBack) / RUNS).toFixed(3)}), queued ${(1 - handed / RUNS).toFixed(3)}; TAKE_BACK sent ${(takeBacks / RUNS).toFixed(3)}; hand-off pops sent ${(handPops / RUNS).toFixed(3)}; PUBSUB NUMSUB ${(numsub / RUNS).toFixed(3)}`,
    );
    console.log('a handed submit script writes, in order (count):');
    for (const [o, n] of [...orders].sort((a, b) => b[1] - a[1]).slice(0, 4)) console.log(`  ${n}  ${o}`);
    console.log('commands a run by sender, name and first key (MONITOR):');
    for (const [k, v] of [...by].sort((a, b) => a[0].localeCompare(b[0])))
      if (v / RUNS >= 0.01) console.log(`  ${k.padEnd(60)} ${(v / RUNS).toFixed(2)}`);
  }

  // 3. strace, one process at a time
  if (STRACE) {
    // the hosts first, before any is replaced (maxRunsPerProcess); each pass reads the pids afresh
    for (const k of ['hosts', 'runner', 'gateway', 'redis']) {
      const pids = procs().find(([n]) => n === k)?.[1] ?? [];
      const out = join(tmpdir(), `seq-count-${process.pid}-${k}`);
      const tracers = pids.map((p, i) => {
        const child = spawn('strace', ['-c', '-f', '-qq', '-o', `${out}.${i}`, '-p', String(p)], {
          stdio: 'ignore',
        });
        return { file: `${out}.${i}`, child, exited: new Promise((r) => child.once('exit', r)) };
      });
      await new Promise((r) => setTimeout(r, 1000));
      await burst(once, RUNS, 1);
      for (const t of tracers) t.child.kill('SIGINT');
      await Promise.all(tracers.map((t) => t.exited));
      const calls = new Map<string, number>();
      for (const t of tracers) {
        for (const f of readFileSync(t.file, 'utf8')
          .split('\n')
          .map((l) => l.trim().split(/\s+/))) {
          if (f.length < 5 || !/^\d/.test(f[0] ?? '') || f.at(-1) === 'total') continue;
          const n = f.at(-1) as string;
          calls.set(n, (calls.get(n) ?? 0) + Number(f[3]));
        }
        rmSync(t.file, { force: true });
      }
      const parts = [...calls].filter(([, c]) => c / RUNS >= 0.01).sort((a, b) => b[1] - a[1]);
      const total = parts.reduce((s, [, c]) => s + c, 0);
      console.log(
        `syscalls a run, ${k} alone under strace -c -f: ${(total / RUNS).toFixed(2)}: ${parts.map(([n, c]) => `${n} ${(c / RUNS).toFixed(2)}`).join(', ')}`,
      );
    }
  }
} finally {
  admin.disconnect();
  await cluster.stop();
}
