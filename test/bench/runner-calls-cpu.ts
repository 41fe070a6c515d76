/**
 * `node test/bench/runner-calls-cpu.ts`: the runner's and its sandbox hosts' side of lone binding
 * calls, in place (round 36, `call-hops`): a local cluster (1 gateway, 1 runner) and an instant
 * loopback App (`ping-app.ts`); one client submits programs of `CALLS` (default 100) sequential
 * calls, `RUNS` (default 40) of them after `WARM` (default 8). Per call (the runs' own start and end
 * spread over their calls): the runner's main-thread CPU (`/proc/<pid>/schedstat`, ns), its whole
 * process's (`stat` ticks), its main thread's wake-ups (voluntary switches) and preemptions
 * (involuntary), its read and write syscalls; the hosts' CPU (every thread of every host alive at
 * both ends, schedstat) and their wake-ups; the gateway's main-thread CPU; the wall per call.
 * `ALLOC=1` samples the runner's allocations over the measured runs (`alloc-sampler.ts`) and prints
 * the bytes a call by site. On this shared 2-core box these are counts to compare side by side
 * (ab.sh), not times: a colder process pays more for the same code.
 *
 *   node test/bench/runner-calls-cpu.ts
 *   ALLOC=1 node test/bench/runner-calls-cpu.ts
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '@islet/devstack';
import { api } from '../e2e/helpers.ts';
import { sequentialCalls } from './baselines.ts';
import { processTree } from './capacity-cpu.ts';
import { pingConnection, processKind, startPingApp } from './ping-app.ts';
import { summarizeAllocations } from './profile-summary.ts';

const CALLS = Number(process.env.CALLS ?? 100);
const RUNS = Number(process.env.RUNS ?? 40);
const WARM = Number(process.env.WARM ?? 8);
const ALLOC = process.env.ALLOC === '1';

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};
/** A thread's CPU, µs (schedstat's first field, ns). */
const threadUs = (pid: number, tid: number) =>
  Number(read(`/proc/${pid}/task/${tid}/schedstat`).split(' ')[0] ?? 0) / 1000;
const switches = (pid: number, tid: number) => {
  const status = read(`/proc/${pid}/task/${tid}/status`);
  return {
    voluntary: Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0),
    involuntary: Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0),
  };
};
/** Every thread's CPU of a process, µs, and its main thread's wake-ups. */
const processUs = (pid: number) => {
  let us = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`, { withFileTypes: false }).map(Number))
    us += threadUs(pid, tid);
  return us;
};

interface Sample {
  runnerMain: number;
  runnerAll: number;
  runnerWakes: number;
  runnerPreempted: number;
  reads: number;
  writes: number;
  hosts: Map<number, { us: number; wakes: number; preempted: number }>;
  gatewayMain: number;
  at: number;
}

const dir = ALLOC ? mkdtempSync(join(tmpdir(), 'islet-runner-calls-')) : '';
const { app, port } = await startPingApp();
const cluster = await startCluster({
  gateways: 1,
  runners: [{ modes: ['read-only'], concurrency: 4 }],
  env: {
    ISLET_TENANT_POOL_SHARE: '1',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(ALLOC
      ? { NODE_OPTIONS: `--import ${join(import.meta.dirname, 'alloc-sampler.ts')}`, BENCH_ALLOC_DIR: dir }
      : {}),
    // E.g. `--import <a preload>` for a count in the cluster's processes.
    ...(process.env.CLUSTER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.CLUSTER_NODE_OPTIONS } : {}),
  },
});
try {
  const runner = cluster.runners[0]!.pid!;
  const gateway = cluster.gateways[0]!.pid!;
  const a = api(cluster.url, cluster.devKey);
  const connection = await pingConnection(a, port);
  const program = sequentialCalls(CALLS);
  const run = async () => {
    const res = await a(
      'POST',
      '/v1/runs',
      { code: program, description: 'Runner side of calls', sessionId: 'calls', connections: [connection] },
      { prefer: 'wait=60' },
    );
    if ((res.body as { status?: string }).status !== 'Completed')
      throw new Error(`run ended ${JSON.stringify(res.body)}`);
  };
  const sample = (): Sample => {
    const hosts = new Map<number, { us: number; wakes: number; preempted: number }>();
    for (const pid of processTree(runner).slice(1)) {
      if (processKind(read(`/proc/${pid}/cmdline`).replaceAll('\0', ' ')) !== 'host') continue;
      const s = switches(pid, pid);
      hosts.set(pid, { us: processUs(pid), wakes: s.voluntary, preempted: s.involuntary });
    }
    const io = read(`/proc/${runner}/io`);
    const stat = read(`/proc/${runner}/stat`);
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const s = switches(runner, runner);
    return {
      runnerMain: threadUs(runner, runner),
      runnerAll: (Number(f[11]) + Number(f[12])) * 10_000,
      runnerWakes: s.voluntary,
      runnerPreempted: s.involuntary,
      reads: Number(/^syscr: (\d+)/m.exec(io)?.[1]),
      writes: Number(/^syscw: (\d+)/m.exec(io)?.[1]),
      hosts,
      gatewayMain: threadUs(gateway, gateway),
      at: performance.now(),
    };
  };
  for (let i = 0; i < WARM; i++) await run();
  if (ALLOC) process.kill(runner, 'SIGUSR2');
  const s0 = sample();
  for (let i = 0; i < RUNS; i++) await run();
  const s1 = sample();
  if (ALLOC) process.kill(runner, 'SIGUSR2');
  const calls = RUNS * CALLS;
  const per = (x: number, digits = 1) => (x / calls).toFixed(digits);
  let hostUs = 0;
  let hostWakes = 0;
  let hostPreempted = 0;
  for (const [pid, h1] of s1.hosts) {
    const h0 = s0.hosts.get(pid);
    if (!h0) continue; // started meanwhile: its start is not a call's
    hostUs += h1.us - h0.us;
    hostWakes += h1.wakes - h0.wakes;
    hostPreempted += h1.preempted - h0.preempted;
  }
  console.log(
    `${RUNS} runs of ${CALLS} sequential calls; per call: wall ${per((s1.at - s0.at) * 1000)} µs; ` +
      `runner main thread ${per(s1.runnerMain - s0.runnerMain)} µs CPU (process ${per(s1.runnerAll - s0.runnerAll)}), ` +
      `wake-ups ${per(s1.runnerWakes - s0.runnerWakes, 2)}, preempted ${per(s1.runnerPreempted - s0.runnerPreempted, 2)}, ` +
      `syscalls ${per(s1.reads - s0.reads, 2)} reads + ${per(s1.writes - s0.writes, 2)} writes; ` +
      `hosts ${per(hostUs)} µs CPU, main-thread wake-ups ${per(hostWakes, 2)}, preempted ${per(hostPreempted, 2)}; ` +
      `gateway main thread ${per(s1.gatewayMain - s0.gatewayMain)} µs`,
  );
  if (ALLOC) {
    const file = join(dir, `alloc.${runner}.heapprofile`);
    for (let i = 0; i < 100 && !readdirSync(dir).includes(`alloc.${runner}.heapprofile`); i++)
      await new Promise((r) => setTimeout(r, 100));
    console.log(`=== runner allocations (${file}), per call`);
    console.log(summarizeAllocations(file, calls, Number(process.env.TOP ?? 30)));
  }
} finally {
  await cluster.stop();
  app.close();
}
