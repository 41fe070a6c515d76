/**
 * `node test/bench/call-ticks.ts`: `process.nextTick` calls and readable-stream pushes a lone
 * sequential binding call costs the runner and the gateway (round 40, `call-floor`): `call-trace.ts`'s
 * cluster with `tick-total.mjs` preloaded in both, `WARM` (default 5) runs, then `RUNS` (default 20)
 * programs of `CALLS` (default 40) sequential calls; per call the difference of each process's
 * totals (the runs' own start and end spread over their calls, alike for any side of an ABBA).
 * Counts, not times: they read the same at any load.
 *
 * Round 41 (`stdout-pair`) added, for the runner and for its sandbox hosts (every host under the
 * runner when the measured runs start): syscalls a call by name (`perf stat` of the
 * `raw_syscalls`/`syscalls` tracepoints on those pids; `SYSCALLS=0` leaves it out), context switches
 * a call (every thread's `voluntary_ctxt_switches` + `nonvoluntary_ctxt_switches`) and CPU µs a call
 * (every thread's on-CPU time, `/proc/<pid>/task/<tid>/schedstat`): the CPU is a time, claimed only
 * under the bench lock.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from '../e2e/helpers.ts';
import { parallelCalls, sequentialCalls } from './baselines.ts';
import { processTree } from './capacity-cpu.ts';
import { pingConnection, processKind, runWithApp, startCallCluster, startPingApp } from './ping-app.ts';
import { taskIds } from './proc-tasks.ts';

const WARM = Number(process.env.WARM ?? 5);
const RUNS = Number(process.env.RUNS ?? 20);
const CALLS = Number(process.env.CALLS ?? 40);
const dir = mkdtempSync(join(tmpdir(), 'islet-call-ticks-'));
const { app, port } = await startPingApp();
const cluster = await startCallCluster({
  // SITES=1: `tick-sites.mjs` (the same totals, plus each tick's, push's and setImmediate's caller).
  NODE_OPTIONS: `--import ${join(import.meta.dirname, process.env.SITES === '1' ? 'tick-sites.mjs' : 'tick-total.mjs')}`,
  TICK_DIR: dir,
});
const SYSCALLS = process.env.SYSCALLS !== '0';
// PER_THREAD=1: the syscalls also by thread (`perf stat --per-thread`), each thread named as perf does.
const PER_THREAD = process.env.PER_THREAD === '1';
const SYSCALL_EVENTS = [
  'raw_syscalls:sys_enter',
  'syscalls:sys_enter_read',
  'syscalls:sys_enter_write',
  'syscalls:sys_enter_writev',
  'syscalls:sys_enter_epoll_wait',
  'syscalls:sys_enter_epoll_pwait',
  'syscalls:sys_enter_futex',
  'syscalls:sys_enter_mprotect',
];

/** Every thread's on-CPU ns and context switches of `pids`, summed. */
function threadTotals(pids: number[]): { cpuNs: number; switches: number } {
  let cpuNs = 0;
  let switches = 0;
  for (const pid of pids) {
    const tids = taskIds(pid);
    for (const tid of tids) {
      try {
        cpuNs += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
        switches += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
        switches += Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
      } catch {
        // gone
      }
    }
  }
  return { cpuNs, switches };
}

/** `perf stat` of the syscall tracepoints on `pids` until the returned function stops it. */
function perfStat(pids: number[]): () => Promise<Map<string, number>> {
  const perf = spawn(
    'perf',
    [
      'stat',
      '-x',
      ',',
      ...(PER_THREAD ? ['--per-thread'] : []),
      ...SYSCALL_EVENTS.flatMap((e) => ['-e', e]),
      '-p',
      pids.join(','),
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  perf.stderr.on('data', (d) => (err += d));
  return async () => {
    const exited = new Promise((r) => perf.on('exit', r));
    perf.kill('SIGINT');
    await exited;
    const out = new Map<string, number>();
    for (const line of err.split('\n')) {
      // --per-thread: `<comm>-<tid>,<count>,,<event>,…`, each thread's line also kept by its name.
      const cells = line.split(',');
      const [thread, count, , event] = PER_THREAD ? cells : ['', ...cells];
      if (!event || count === undefined || !/^\d+$/.test(count)) continue;
      out.set(event, (out.get(event) ?? 0) + Number(count));
      if (PER_THREAD && thread) out.set(`${thread.trim()} ${event}`, Number(count));
    }
    return out;
  };
}

const settle = () => new Promise((r) => setTimeout(r, 500));
const read = (pid: number) =>
  JSON.parse(readFileSync(join(dir, `tick-total.${pid}.json`), 'utf8')) as {
    ticks: number;
    pushes: number;
    undiciRequests: number;
  };
const readSites = (pid: number) =>
  JSON.parse(readFileSync(join(dir, `tick-sites.${pid}.json`), 'utf8')) as Record<
    string,
    Record<string, number>
  >;
try {
  const a = api(cluster.url, cluster.devKey);
  const connection = await pingConnection(a, port);
  // PAR=1: each run makes its CALLS calls at once (a Promise.all), not one after another.
  const program = process.env.PAR === '1' ? parallelCalls(CALLS) : sequentialCalls(CALLS);
  for (let i = 0; i < WARM; i++) await runWithApp(a, program, connection);
  await settle();
  const who = { runner: cluster.runners[0]!.pid!, gateway: cluster.gateways[0]!.pid! };
  const hosts = processTree(who.runner)
    .slice(1)
    .filter((pid) => {
      try {
        return processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')) === 'host';
      } catch {
        return false;
      }
    });
  const stops = SYSCALLS ? { runner: perfStat([who.runner]), hosts: perfStat(hosts) } : undefined;
  if (stops) await new Promise((r) => setTimeout(r, 1500));
  const totals = { runner: threadTotals([who.runner]), hosts: threadTotals(hosts) };
  const before = { runner: read(who.runner), gateway: read(who.gateway) };
  const sitesBefore =
    process.env.SITES === '1'
      ? { runner: readSites(who.runner), gateway: readSites(who.gateway) }
      : undefined;
  for (let i = 0; i < RUNS; i++) await runWithApp(a, program, connection);
  const after = { runner: threadTotals([who.runner]), hosts: threadTotals(hosts) };
  const syscalls = stops ? { runner: await stops.runner(), hosts: await stops.hosts() } : undefined;
  await settle();
  const calls = RUNS * CALLS;
  for (const name of ['runner', 'hosts'] as const) {
    const cpu = (after[name].cpuNs - totals[name].cpuNs) / 1000 / calls;
    const switches = (after[name].switches - totals[name].switches) / calls;
    const counted = syscalls?.[name];
    const by = counted
      ? [...counted]
          .filter(([, n]) => n / calls >= 0.01)
          .map(
            ([e, n]) =>
              `${e.replace(/sys_enter_?|raw_syscalls:|syscalls:/g, '') || 'all'} ${(n / calls).toFixed(2)}`,
          )
          .join(', ')
      : 'not counted';
    console.log(
      `${name}${name === 'hosts' ? ` (${hosts.length})` : ''}: CPU ${cpu.toFixed(1)} µs a call, context switches ${switches.toFixed(2)} a call, syscalls a call: ${by}`,
    );
  }
  for (const name of ['runner', 'gateway'] as const) {
    const after = read(who[name]);
    console.log(
      `${name}: nextTick ${((after.ticks - before[name].ticks) / calls).toFixed(2)} a call, stream pushes ${((after.pushes - before[name].pushes) / calls).toFixed(2)} a call, undici requests ${((after.undiciRequests - before[name].undiciRequests) / RUNS).toFixed(2)} a run (${RUNS} runs of ${CALLS} calls${process.env.PAR === '1' ? ' at once' : ''})`,
    );
  }
  // The runner's sites too since round 50 (`binding-runner`).
  for (const name of sitesBefore ? (['runner', 'gateway'] as const) : []) {
    const sitesAfter = readSites(who[name]);
    for (const [kind, by] of Object.entries(sitesAfter)) {
      const rows = Object.entries(by)
        .map(([site, n]) => [site, (n - (sitesBefore?.[name][kind]?.[site] ?? 0)) / calls] as const)
        .filter(([, n]) => n >= 0.05)
        .sort((x, y) => y[1] - x[1]);
      console.log(`${name} ${kind} by site, a call:`);
      for (const [site, n] of rows) console.log(`  ${n.toFixed(2)}  ${site}`);
    }
  }
} finally {
  await cluster.stop();
  app.close();
}
