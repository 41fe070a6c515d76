/**
 * `node test/bench/engine-calls.ts`: a binding call through the engine alone (a sandbox host, its
 * isolate, the frames both ways, an `onCall` that answers at once; no runner, gateway, Redis or
 * App), the part of a call's round trip that is the host's and the engine's. Runs programs of
 * `CALLS` (default 200) sequential calls (with `PARALLEL=1`, one `Promise.all` of them) for
 * `BENCH_SECONDS` (default 4) after one run of warm-up,
 * and prints per call: the round trip (p50 of each run's mean), CPU (this process,
 * the hosts: /proc, exited threads included) and the hosts' context switches and task clock
 * (`perf stat -p`, every thread: a switch is a thread that slept and was woken, the thread hops of
 * a call), and their read and write syscalls (/proc/<pid>/io: a frame chunk read or written is one,
 * the isolate's own work none). `BUDGET=excluding` runs the programs with `excluding-binding-waits`, `BUDGET=none`
 * without a deadline. `BURSTS=k` (with `PARALLEL=1`): the outcomes are answered in k bursts,
 * `BURST_GAP_MS` (default 1) apart, each burst resolved in one callback (as the runner hands a
 * gateway's answer chunk to the host), instead of all in the turn they were asked in: what a host
 * pays for each burst of outcomes it is woken for.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createEngine } from '@islet/engine';
import { pct } from './baselines.ts';

const CALLS = Number(process.env.CALLS ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const BUDGET = process.env.BUDGET ?? 'elapsed';
const TICK_MS = 1000 / 100;

/** The engine's live sandbox hosts (it may keep a spare beside the one that serves). */
const hosts = new Set<number>();
// No replacement for memory growth within the window: the figures are the call path's, not a host start's.
const engine = createEngine({
  maxHostResidentGrowthBytes: 2 ** 40,
  onProcessEvent: (e) => {
    if (e.pid === undefined) return;
    if (e.type === 'started') hosts.add(e.pid);
    else hosts.delete(e.pid);
  },
});
const limits =
  BUDGET === 'none'
    ? { timeoutMs: null }
    : BUDGET === 'excluding'
      ? { timeoutMs: 60_000, timeBudget: 'excluding-binding-waits' as const }
      : { timeoutMs: 60_000 };
const PARALLEL = process.env.PARALLEL === '1';
const code = PARALLEL
  ? `return (await Promise.all(Array.from({ length: ${CALLS} }, (_, i) => t({ i })))).length;`
  : `let n = 0; for (let i = 0; i < ${CALLS}; i++) n += (await t({ i })).n; return n;`;
const BURSTS = Number(process.env.BURSTS ?? 0);
const BURST_GAP_MS = Number(process.env.BURST_GAP_MS ?? 1);
const answer = { type: 'result' as const, valueJson: '{"n":1}' };
// A burst's callers, answered together by one timer (one callback: one burst of frames to the host).
const bursts = new Map<number, (() => void)[]>();
const inBurst = (i: number): Promise<void> =>
  new Promise((resolve) => {
    const b = i % BURSTS;
    let waiting = bursts.get(b);
    if (!waiting) {
      const list: (() => void)[] = [];
      waiting = list;
      bursts.set(b, list);
      setTimeout(
        () => {
          bursts.delete(b);
          for (const r of list) r();
        },
        BURST_GAP_MS * (b + 1),
      );
    }
    waiting.push(resolve);
  });
const run = () =>
  engine.execute(code, {
    bindings: ['t'],
    limits,
    partition: 'bench',
    onCall:
      BURSTS > 0
        ? async (call) => {
            await inBurst((JSON.parse(call.argsJson) as { i: number }).i);
            return answer;
          }
        : async () => answer,
  });

/** CPU ms of `pids`, every thread they had (exited ones included). */
function cpuMs(pids: number[]): number {
  let ms = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ms += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    } catch {
      // gone
    }
  }
  return ms;
}

/** Read and write syscalls of `pids` (/proc/<pid>/io: every thread, exited ones included). */
function syscalls(pids: number[]): { reads: number; writes: number } {
  let reads = 0;
  let writes = 0;
  for (const pid of pids) {
    try {
      const io = readFileSync(`/proc/${pid}/io`, 'utf8');
      reads += Number(/^syscr: (\d+)/m.exec(io)?.[1] ?? 0);
      writes += Number(/^syscw: (\d+)/m.exec(io)?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return { reads, writes };
}

for (let i = 0; i < 3; i++) {
  const warm = await run();
  if (warm.status !== 'completed')
    throw new Error(`warm-up run ${warm.status}: ${JSON.stringify(warm.failure)}`);
}
await new Promise((r) => setTimeout(r, 200));
const pids = [...hosts];
const hostBefore = cpuMs(pids);
const ioBefore = syscalls(pids);
const selfIoBefore = syscalls([process.pid]);
const perf = spawn(
  'perf',
  ['stat', '-x', ',', '-e', 'context-switches,cpu-migrations,task-clock', '-p', pids.join(',')],
  { stdio: ['ignore', 'ignore', 'pipe'] },
);
const perfDone = new Promise((r) => perf.on('close', r));
let perfText = '';
perf.stderr.on('data', (d: Buffer) => {
  perfText += d.toString();
});
await new Promise((r) => setTimeout(r, 300));
const selfBefore = process.cpuUsage();
const perCall: number[] = [];
let calls = 0;
const served = new Set<number>();
const until = Date.now() + SECONDS * 1000;
while (Date.now() < until) {
  const t0 = performance.now();
  const out = await run();
  if (out.status !== 'completed') throw new Error(`run ${out.status}: ${JSON.stringify(out.failure)}`);
  if (out.hostPid !== undefined) served.add(out.hostPid);
  perCall.push(((performance.now() - t0) * 1000) / CALLS);
  calls += CALLS;
}
const self = process.cpuUsage(selfBefore);
const hostCpu = cpuMs(pids) - hostBefore;
const ioAfter = syscalls(pids);
const selfIoAfter = syscalls([process.pid]);
const replaced = [...served].some((p) => !pids.includes(p));
perf.kill('SIGINT');
await perfDone;
const counter = (name: string) =>
  Number(/^([\d.]+),[^,]*,(\S+?),/m.exec(perfText.split('\n').find((l) => l.includes(name)) ?? '')?.[1]);
console.log(
  `${perCall.length} runs of ${CALLS} ${PARALLEL ? 'parallel' : 'sequential'} calls, budget ${BUDGET}, hosts ${pids.join(', ')}${replaced ? ' (a run served by a host started meanwhile: not counted)' : ''}`,
);
console.log(
  `round trip per call, µs: p50 ${pct(perCall, 50).toFixed(1)}, p10 ${pct(perCall, 10).toFixed(1)}, p90 ${pct(perCall, 90).toFixed(1)}`,
);
console.log(
  `CPU per call, µs: engine (this process) ${(((self.user + self.system) / 1000 / calls) * 1000).toFixed(1)}, hosts ${((hostCpu / calls) * 1000).toFixed(1)} (/proc, 10 ms ticks)`,
);
console.log(
  `hosts per call (perf stat, all threads): context switches ${(counter('context-switches') / calls).toFixed(2)}, CPU migrations ${(counter('cpu-migrations') / calls).toFixed(2)}, task clock ${((counter('task-clock') / calls) * 1000).toFixed(1)} µs`,
);
console.log(
  `syscalls per call (/proc io): engine (this process) reads ${((selfIoAfter.reads - selfIoBefore.reads) / calls).toFixed(2)}, writes ${((selfIoAfter.writes - selfIoBefore.writes) / calls).toFixed(2)}; hosts reads ${((ioAfter.reads - ioBefore.reads) / calls).toFixed(2)}, writes ${((ioAfter.writes - ioBefore.writes) / calls).toFixed(2)}`,
);
await engine.close();
