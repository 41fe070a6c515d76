/**
 * `node test/bench/refuse-count.ts` (round 52, `refuse-count`): `ISLET_HANDOFF_REFUSE_ON_MARKER`
 * on vs off COUNTED, at one client (sequential) and at 16 — the cluster bench's stack (one gateway,
 * one read-only runner of `BENCH_SLOTS` slots, default 4, share 0.5), trivial waited runs, `WARM`
 * runs (default 150) then each pass over `RUNS` runs (default 300) from `CLIENTS` clients (default 1).
 * `REFUSE=on|off` sets the runner's flag (default: the release's own default).
 *  1. plain: Redis's `INFO commandstats` a run (scripts' own commands counted); each process's main
 *     thread's voluntary switches a run (its wake-ups: every one is a sleep ended) and CPU a run.
 *  2. MONITOR: what each run's pick-up took — handed (a push on a worker's hand-off key inside the
 *     submit's script) and then taken by the worker's pop or by a take-back (alone, or carried by its
 *     fetch), or queued and then fetched by which script (the worker's fetch after its marker pop, with
 *     or without a take-back; a completion's fetch-next); the registrations written and refused, the
 *     pops, the marker writes, and every fetch the worker sent (with a job or empty), a run.
 *  3. `STRACE=1` (default): `strace -c -f -e trace=epoll_wait,epoll_pwait` on the gateway, the runner
 *     and Redis, one at a time, a pass each: event-loop wake-ups (epoll returns) a run.
 * `CALLGRIND=1`: instead of 1–3, the stack's redis-server runs under valgrind's callgrind (whole
 * process, no AOF) and each pass prints Redis's instructions a run, the idle rate (serverCron and the
 * clients' timers, read over `IDLE_S` s before the pass, default 2) taken off, and its commandstats.
 * Counts, not times: read at any load, no lock.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { freePort } from '@islet/testkit';
import { processTree, redisPids } from './capacity-cpu.ts';
import { burst, commandStats, trivialRun } from './cluster-figures.ts';

const RUNS = Number(process.env.RUNS ?? 300);
const WARM = Number(process.env.WARM ?? 150);
const CLIENTS = Number(process.env.CLIENTS ?? 1);
const STRACE = process.env.STRACE !== '0';
const CALLGRIND = process.env.CALLGRIND === '1';
const PASSES = Number(process.env.PASSES ?? (CALLGRIND ? 2 : 1));
const IDLE_S = Number(process.env.IDLE_S ?? 2);

let valgrind: ChildProcess | undefined;
let redisUrl: string | undefined;
const cgOut = join(tmpdir(), `refuse-count-${process.pid}.callgrind`);
if (CALLGRIND) {
  const port = await freePort();
  valgrind = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${cgOut}`,
      'redis-server',
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    ],
    { stdio: 'ignore' },
  );
  redisUrl = `redis://127.0.0.1:${port}`;
  const probe = createRedis(redisUrl);
  // refused until valgrind's server listens: the ping loop below retries
  probe.on('error', () => undefined);
  for (let i = 0; ; i++) {
    try {
      await probe.ping();
      break;
    } catch (err) {
      if (i > 120) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  probe.disconnect();
}
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: Number(process.env.BENCH_SLOTS ?? 4) }],
  env: {
    ISLET_TENANT_POOL_SHARE: '0.5',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.REFUSE ? { ISLET_HANDOFF_REFUSE_ON_MARKER: process.env.REFUSE } : {}),
  },
  ...(redisUrl ? { redisUrl } : {}),
});
const gateway = cluster.gateways[0]?.pid as number;
const runner = cluster.runners[0]?.pid as number;
const redis =
  valgrind?.pid ??
  (redisPids([Number(new URL(cluster.redisUrl).port)])
    .values()
    .next().value as number);
const procs = (): [string, number[]][] => [
  ['gateway', [gateway]],
  ['runner', [runner]],
  ['redis', [redis]],
  ['hosts', processTree(runner).filter((p) => p !== runner)],
];
const r = (n: number) => (n / RUNS).toFixed(3);
console.log(
  `refuse-count: REFUSE=${process.env.REFUSE ?? '(default)'} CLIENTS=${CLIENTS} RUNS=${RUNS} WARM=${WARM}${CALLGRIND ? ' CALLGRIND' : ''}`,
);

/** Voluntary switches of each process's main thread (its wake-ups) and CPU of the whole, ns. */
function wakes(): Map<string, { vol: number; cpuNs: number }> {
  const out = new Map<string, { vol: number; cpuNs: number }>();
  for (const [k, pids] of procs())
    for (const p of pids) {
      const sum = out.get(k) ?? { vol: 0, cpuNs: 0 };
      try {
        for (const t of readdirSync(`/proc/${p}/task`)) {
          const s = readFileSync(`/proc/${p}/task/${t}/status`, 'utf8');
          sum.vol += Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(s)?.[1]);
          sum.cpuNs += Number(readFileSync(`/proc/${p}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
        }
      } catch {
        // gone
      }
      out.set(k, sum);
    }
  return out;
}
/** The main thread alone (/proc/<pid>/status is the thread group leader's). */
function mainVol(pid: number): number {
  try {
    return Number(
      /^voluntary_ctxt_switches:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))?.[1],
    );
  } catch {
    return 0;
  }
}

const admin = createRedis(cluster.redisUrl);
const once = trivialRun(cluster, 'Refuse count');
const settle = () => new Promise((res) => setTimeout(res, 300));
const instructions = () =>
  Number(
    /Th 1\s+([\d,]+)/
      .exec(execFileSync('callgrind_control', ['-e', String(valgrind?.pid)], { encoding: 'utf8' }))?.[1]
      ?.replaceAll(',', '') ?? Number.NaN,
  );
async function commandsLine(c0: Map<string, number>): Promise<string> {
  const c1 = commandStats(await admin.info('commandstats'));
  const cmds = [...c1]
    .map(([k, v]) => [k, (v - (c0.get(k) ?? 0) - (k === 'info' ? 1 : 0)) / RUNS] as const)
    .filter(([, v]) => v >= 0.005)
    .sort((a, b) => b[1] - a[1]);
  return `Redis commands a run: ${cmds.reduce((s, [, v]) => s + v, 0).toFixed(2)}: ${cmds.map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')}`;
}

try {
  await burst(once, WARM, CLIENTS);
  await settle();
  if (CALLGRIND) {
    for (let pass = 0; pass < PASSES; pass++) {
      const idle0 = instructions();
      const idleAt = performance.now();
      await new Promise((res) => setTimeout(res, IDLE_S * 1000));
      const idleRate = (instructions() - idle0) / (performance.now() - idleAt);
      const c0 = commandStats(await admin.info('commandstats'));
      const i0 = instructions();
      const t0 = performance.now();
      await burst(once, RUNS, CLIENTS);
      const ms = performance.now() - t0;
      const all = instructions() - i0;
      console.log(
        `Redis instructions a run (callgrind, whole process): ${(all / RUNS / 1000).toFixed(1)} K; idle ${(idleRate / 1000).toFixed(1)} K/ms over ${(ms / RUNS).toFixed(2)} ms a run taken off: ${((all - idleRate * ms) / RUNS / 1000).toFixed(1)} K`,
      );
      console.log(await commandsLine(c0));
    }
  } else {
    // 1. plain
    for (let pass = 0; pass < PASSES; pass++) {
      const w0 = wakes();
      const m0 = [gateway, runner, redis].map(mainVol);
      const c0 = commandStats(await admin.info('commandstats'));
      await burst(once, RUNS, CLIENTS);
      console.log(await commandsLine(c0));
      const m1 = [gateway, runner, redis].map(mainVol);
      const w1 = wakes();
      console.log(
        `main-thread voluntary switches (wake-ups) a run: gateway ${r((m1[0] ?? 0) - (m0[0] ?? 0))}, runner ${r((m1[1] ?? 0) - (m0[1] ?? 0))}, redis ${r((m1[2] ?? 0) - (m0[2] ?? 0))}`,
      );
      console.log(
        `all threads a run, voluntary switches / CPU µs: ${[...w1]
          .map(([k, v]) => {
            const a = w0.get(k) ?? { vol: 0, cpuNs: 0 };
            return `${k} ${r(v.vol - a.vol)} / ${((v.cpuNs - a.cpuNs) / RUNS / 1000).toFixed(0)}`;
          })
          .join('; ')}`,
      );
    }
    // 2. MONITOR
    if (process.env.MONITOR !== '0') await monitorPass();
    // 3. strace, one process at a time
    if (STRACE)
      for (const k of ['runner', 'gateway', 'redis']) {
        const pid = procs().find(([n]) => n === k)?.[1][0] as number;
        const out = join(tmpdir(), `refuse-count-${process.pid}-${k}`);
        const child = spawn(
          'strace',
          [
            '-c',
            '-f',
            '-qq',
            '-e',
            'trace=epoll_wait,epoll_pwait,epoll_pwait2',
            '-o',
            out,
            '-p',
            String(pid),
          ],
          { stdio: 'ignore' },
        );
        const exited = new Promise((res) => child.once('exit', res));
        await new Promise((res) => setTimeout(res, 1000));
        await burst(once, RUNS, CLIENTS);
        child.kill('SIGINT');
        await exited;
        const calls: string[] = [];
        for (const f of readFileSync(out, 'utf8')
          .split('\n')
          .map((l) => l.trim().split(/\s+/))) {
          if (f.length < 5 || !/^\d/.test(f[0] ?? '') || f.at(-1) === 'total') continue;
          calls.push(`${f.at(-1)} ${r(Number(f[3]))}`);
        }
        rmSync(out, { force: true });
        console.log(`epoll returns a run, ${k} under strace -c -f: ${calls.join(', ') || 'none'}`);
      }
  }
} finally {
  admin.disconnect();
  await cluster.stop();
  if (valgrind && valgrind.exitCode === null) {
    const exited = new Promise((res) => valgrind?.once('exit', res));
    valgrind.kill('SIGTERM');
    await exited;
  }
  // the counts were read live (callgrind_control): its output file is not kept
  rmSync(cgOut, { force: true });
}

/** One pass under MONITOR: each run's pick-up path and the hand-off's messages, a run. */
async function monitorPass(): Promise<void> {
  const watcher = createRedis(cluster.redisUrl);
  const monitor = await watcher.monitor();
  const isHand = (k: string | undefined) => /:handoff:[^:]+$/.test(k ?? '');
  const isIdle = (k: string | undefined) => /:idle$/.test(k ?? '');
  const count = new Map<string, number>();
  const add = (k: string) => count.set(k, (count.get(k) ?? 0) + 1);
  /** A push not yet taken, by worker key. */
  const pending = new Set<string>();
  /** The client command the lua lines that follow belong to, and those lines. */
  let head: string[] | undefined;
  let lua: string[][] = [];
  const close = () => {
    if (!head) return;
    const cmd = (head[0] ?? '').toLowerCase();
    const text = head[1] ?? '';
    const names = lua.map((a) => (a[0] ?? '').toLowerCase());
    const locks = lua.filter((a) => a[0]?.toLowerCase() === 'set' && /:lock$/.test(a[1] ?? '')).length;
    if (cmd === 'eval' && /^redis\.set_repl\(redis\.REPL_NONE\)(\\n|\n)if redis\.call\('EXISTS'/.test(text)) {
      add('registration sent');
      add(names.includes('zadd') ? 'registration written' : 'registration refused');
      add(`registration keys ${head[2]}`);
    } else if (names.includes('zpopmax') && isIdle(lua[names.indexOf('zpopmax')]?.[1])) {
      const handed = lua.some((a) => a[0]?.toLowerCase() === 'zadd' && isHand(a[1]));
      add(handed ? 'submit handed' : 'submit queued (idle set read, nothing handed)');
      if (!handed && names.includes('zadd') && lua.some((a) => /:marker$/.test(a[1] ?? '')))
        add('submit set marker');
    } else if (
      names.includes('zpopmax') ||
      (names.includes('hmset') && lua.some((a) => /:meta$/.test(a[1] ?? '')))
    ) {
      add('submit queued (no ZPOPMAX of the idle set)');
    } else if (names.includes('lrem') && lua.some((a) => /:active$/.test(a[1] ?? ''))) {
      add('completion sent');
      if (locks > 0) add('pick-up: queued, fetched by a completion (fetch-next)');
    } else if (
      (cmd === 'evalsha' || cmd === 'eval') &&
      lua.some(
        (a) => /^(rpoplpush|lmove|zpopmin)$/i.test(a[0] ?? '') && /:(wait|prioritized)$/.test(a[1] ?? ''),
      )
    ) {
      const took = lua[0]?.[0]?.toLowerCase() === 'zrem' && isIdle(lua[0]?.[1]);
      add(`worker fetch${took ? ' + take-back' : ''} sent`);
      if (locks > 0) add(`pick-up: queued, fetched by the worker's fetch${took ? ' + take-back' : ''}`);
      else add(`worker fetch${took ? ' + take-back' : ''}: empty`);
    } else if (cmd === 'eval' && head[2] === '3' && isIdle(head[3])) add('take-back sent alone');
    head = undefined;
    lua = [];
  };
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const cmd = (args[0] ?? '').toLowerCase();
    if (source === 'lua') {
      lua.push(args);
      if (cmd === 'zadd' && isHand(args[1])) {
        add('pick-up: handed');
        pending.add(args[1] as string);
      }
      if (cmd === 'zadd' && /:marker$/.test(args[1] ?? '')) add('marker written');
      if (cmd === 'zrem' && isHand(args[1]) && pending.delete(args[1] as string))
        add('handed, taken by a take-back');
      return;
    }
    close();
    if (cmd === 'bzpopmin') {
      if (isHand(args[1])) {
        add('hand-off pops sent');
        // the push landed before this pop (served at once) or while it blocked: its pop took it
        if (pending.delete(args[1] as string)) add('handed, taken by the pop');
      } else add('BullMQ marker pops sent (no hand-off key)');
      return;
    }
    head = args;
  });
  await settle();
  count.clear();
  pending.clear();
  await burst(once, RUNS, CLIENTS);
  await settle();
  close();
  // the pops of the runs' last hand-offs went with the next registration (none comes after the last)
  for (const _ of pending) add('handed, taken by the pop');
  monitor.disconnect();
  watcher.disconnect();
  console.log(`a run (MONITOR, ${RUNS} runs, ${CLIENTS} clients):`);
  for (const [k, v] of [...count].sort((a, b) => a[0].localeCompare(b[0])))
    console.log(`  ${k.padEnd(62)} ${r(v)}`);
}
