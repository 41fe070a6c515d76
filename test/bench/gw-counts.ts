/**
 * `node test/bench/gw-counts.ts`: what a trivial run costs the gateway in counts that do not move
 * with the machine's load — the bytes and read/write syscalls of its process (`/proc/<pid>/io`),
 * its voluntary and involuntary switches (`/proc/<pid>/status`), its CPU (`/proc/<pid>/stat`, a
 * time: shown, not claimed), and the Redis commands each process sends, by name (`MONITOR`, each
 * line's client address mapped to its process through `ss -tnp`). Written to compare a base's
 * `services/` with the head's under `ab.sh` when the gateway's CPU a run reads different though no
 * change touched its run path (round 34, `gw-drift`).
 *
 * The cluster is `startOneClientCluster`'s (`BENCH_SLOTS`, default 4). `PRIME` runs at 16 clients
 * first (default 1500: the hot code compiled, every slot's host started), then for each client
 * count of `CLIENTS` (default `1,16`) `WARM` runs (default 200) and `RUNS` counted (default 1000).
 *
 *   bash test/bench/ab.sh 0ce2f42 1 "node test/bench/gw-counts.ts"
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRedis } from '@islet/core';
import { processTree } from './capacity-cpu.ts';
import { burst, startOneClientCluster, trivialRun } from './cluster-figures.ts';
import { processKind } from './ping-app.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const WARM = Number(process.env.WARM ?? 200);
const PRIME = Number(process.env.PRIME ?? 1500);
const CLIENTS = (process.env.CLIENTS ?? '1,16').split(',').map(Number);
const CLOCK_TICK_MS = 10; // USER_HZ 100 on Linux

/** The cluster's long-lived processes (not the sandbox hosts), pid → kind. */
function kinds(): Map<number, string> {
  const out = new Map<number, string>();
  for (const pid of processTree(process.pid).slice(1)) {
    try {
      const kind = processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
      if (kind && kind !== 'host') out.set(pid, kind);
    } catch {}
  }
  return out;
}

interface ProcCounts {
  rchar: number;
  wchar: number;
  syscr: number;
  syscw: number;
  vol: number;
  invol: number;
  cpuMs: number;
}

function procCounts(pid: number): ProcCounts {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const num = (text: string, name: string) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(text)?.[1]);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    rchar: num(io, 'rchar'),
    wchar: num(io, 'wchar'),
    syscr: num(io, 'syscr'),
    syscw: num(io, 'syscw'),
    // /proc/<pid>/status counts the main thread only: every thread's, summed
    vol: threadsSum(pid, 'voluntary_ctxt_switches'),
    invol: threadsSum(pid, 'nonvoluntary_ctxt_switches'),
    cpuMs: (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS,
  };
}

function threadsSum(pid: number, field: string): number {
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      sum += Number(new RegExp(`^${field}:\\s*(\\d+)`, 'm').exec(text)?.[1] ?? 0);
    } catch {}
  }
  return sum;
}

/** Client port → kind, from `ss -tnp` (the client side of each connection to Redis's port). */
function portKinds(redisPort: number, pids: Map<number, string>): Map<string, string> {
  const out = new Map<string, string>();
  const text = execFileSync('ss', ['-tnpH', 'state', 'established', `dport = :${redisPort}`], {
    encoding: 'utf8',
  });
  for (const line of text.split('\n')) {
    const local = /\s(\S+):(\d+)\s+\S+:\d+\s/.exec(line);
    const pid = /pid=(\d+)/.exec(line);
    if (!local || !pid) continue;
    out.set(local[2] ?? '', pids.get(Number(pid[1])) ?? (Number(pid[1]) === process.pid ? 'bench' : 'other'));
  }
  return out;
}

const cluster = await startOneClientCluster('0.5');
const redisPort = Number(new URL(cluster.redisUrl).port);
const redis = createRedis(cluster.redisUrl);
try {
  const once = trivialRun(cluster, 'gw-counts');
  console.log(`gw-counts: ${PRIME} runs at 16 clients, then a phase each ${WARM} warm and ${RUNS} counted`);
  await burst(once, PRIME, 16);
  for (const clients of CLIENTS) {
    await burst(once, WARM, clients);
    const pids = kinds();
    const ports = portKinds(redisPort, pids);
    let monitor: { disconnect(): void } | undefined;
    const commands = new Map<string, Map<string, number>>();
    let unknown = 0;
    await new Promise<void>((resolve, reject) => {
      redis.monitor((error, m) => {
        if (error || !m) return reject(error);
        // its own connection: left open it reconnects forever once the cluster's Redis stops
        monitor = m;
        m.on('monitor', (_time: string, args: string[], source: string) => {
          const port = source.split(':').at(-1) ?? '';
          let kind = ports.get(port);
          if (!kind) {
            // lua scripts' own calls and a connection opened since are not the client's
            if (source === 'lua') kind = 'lua';
            else kind = 'unmapped';
            unknown++;
          }
          const name = args[0]?.toLowerCase() ?? '?';
          const byName = commands.get(kind) ?? new Map<string, number>();
          byName.set(name, (byName.get(name) ?? 0) + 1);
          commands.set(kind, byName);
        });
        resolve();
      });
    });
    const before = new Map([...pids.keys()].map((pid) => [pid, procCounts(pid)]));
    const started = performance.now();
    await burst(once, RUNS, clients);
    const ms = performance.now() - started;
    const after = new Map([...pids.keys()].map((pid) => [pid, procCounts(pid)]));
    await new Promise((r) => setTimeout(r, 200));
    monitor?.disconnect();
    console.log(`\n== ${clients} client(s): ${RUNS} runs in ${(ms / 1000).toFixed(1)} s; per run:`);
    console.log(
      '| kind | CPU ms | rchar B | wchar B | read syscalls | write syscalls | vol switches | invol |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const [pid, kind] of pids) {
      const a = before.get(pid) as ProcCounts;
      const b = after.get(pid) as ProcCounts;
      const per = (k: keyof ProcCounts, d = 2) => ((b[k] - a[k]) / RUNS).toFixed(d);
      console.log(
        `| ${kind} | ${per('cpuMs', 3)} | ${per('rchar', 0)} | ${per('wchar', 0)} | ${per('syscr')} | ${per('syscw')} | ${per('vol')} | ${per('invol')} |`,
      );
    }
    for (const [kind, byName] of [...commands].sort()) {
      const total = [...byName.values()].reduce((s, n) => s + n, 0);
      const top = [...byName]
        .sort((x, y) => y[1] - x[1])
        .map(([n, c]) => `${n} ${(c / RUNS).toFixed(2)}`)
        .join(', ');
      console.log(`redis commands from ${kind}: ${(total / RUNS).toFixed(2)} a run (${top})`);
    }
    if (unknown) console.log(`(${unknown} commands from unmapped or lua sources)`);
  }
} finally {
  redis.disconnect();
  await cluster.stop();
}
