/**
 * `node test/bench/gateway-calls-cpu.ts`: the gateway's side of a binding call, alone: what serving
 * the runner's calls costs the gateway process, per call. A local cluster with one gateway and no
 * runner (the runs stay queued, so nothing else runs on the gateway); this process plays the runner
 * with the runner's real gateway client (`services/runner/src/gateway-client.ts`, its default
 * transport, to the gateway's internal port) and the App (an instant loopback App, `ping-app.ts`).
 * Each call is a real one: claim in the journal, the App's signed request, the outcome journaled
 * with its `call` event.
 *
 * Phases: `N` (default 2000) lone calls from `CLIENTS` (default 1) loops, each one call after
 * another on a run of its own (more clients keep the gateway busy, so a call's CPU is less a cold
 * wake-up's); then `BATCHES` (default 20) `Promise.all`s of 100. Per call: the gateway's main-thread
 * CPU (`/proc/<pid>/schedstat`, ns), its whole process's CPU (`stat`, ticks), the main thread's
 * wake-ups (voluntary context switches), its read and write syscalls (`io`), this process's CPU
 * (client and App) and the wall time. `ALLOC=1` samples the gateway's allocations over the lone
 * calls (`alloc-sampler.ts`, collected objects included) and prints the bytes a call by site.
 * `AOF=1` (round 37, `call-gw2`): the AOF's bytes a lone call, the scripts' writes with their
 * commands' bytes, and the 4 KB blocks of the file the writes cross (`aof-writes.ts`; a count).
 *
 *   node test/bench/gateway-calls-cpu.ts                 (N 2000, CLIENTS 1, BATCHES 20)
 *   CLIENTS=8 N=4000 node test/bench/gateway-calls-cpu.ts
 *   PER_RUN=1 N=1000 node test/bench/gateway-calls-cpu.ts (a run's first call, its submit with it)
 *   GW_NODE_OPTIONS=--perf-basic-prof-only-functions N=20000 node test/bench/gateway-calls-cpu.ts
 */
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis } from '@islet/core';
import { startCluster } from '@islet/devstack';
import { createGatewayClient } from '../../services/runner/src/gateway-client.ts';
import { api } from '../e2e/helpers.ts';
import { aofFileOf, byKindOf, crossings, parse } from './aof-writes.ts';
import { pingConnection, startPingApp } from './ping-app.ts';
import { summarizeAllocations } from './profile-summary.ts';

const N = Number(process.env.N ?? 2000);
const CLIENTS = Number(process.env.CLIENTS ?? 1);
const BATCHES = Number(process.env.BATCHES ?? 20);
const ALLOC = process.env.ALLOC === '1';
const AOF = process.env.AOF === '1';
/**
 * Calls a run takes before the next run (a journal and an event stream each, kept small).
 * `PER_RUN=1`: every lone call on a run of its own, its submit's work in the gateway's CPU too
 * (round 39, `call-path`: a run's first call, which reads the run's record unless kept from its submit).
 */
const PER_RUN = Number(process.env.PER_RUN ?? 1000);

interface Sample {
  mainUs: number;
  allUs: number;
  wakes: number;
  reads: number;
  writes: number;
  ownUs: number;
  at: number;
}
function sample(pid: number): Sample {
  const main = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  let reads = Number.NaN;
  let writes = Number.NaN;
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    reads = Number(/^syscr: (\d+)/m.exec(io)?.[1]);
    writes = Number(/^syscw: (\d+)/m.exec(io)?.[1]);
  } catch {}
  const own = process.cpuUsage();
  return {
    mainUs: main,
    allUs: (Number(f[11]) + Number(f[12])) * 10_000,
    wakes: Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0),
    reads,
    writes,
    ownUs: own.user + own.system,
    at: performance.now(),
  };
}

const dir = ALLOC ? mkdtempSync(join(tmpdir(), 'islet-gw-calls-')) : '';
const { app, port } = await startPingApp();
const cluster = await startCluster({
  gateways: 1,
  runners: [],
  env: {
    ISLET_TENANT_POOL_SHARE: '1',
    ISLET_RATE_LIMIT_PER_MINUTE: '1000000',
    // No runner: every run stays in flight (PER_RUN=1 makes thousands).
    ISLET_MAX_IN_FLIGHT_RUNS: '1000000',
    ...(ALLOC
      ? { NODE_OPTIONS: `--import ${join(import.meta.dirname, 'alloc-sampler.ts')}`, BENCH_ALLOC_DIR: dir }
      : {}),
    // E.g. `--perf-basic-prof-only-functions` for a `perf record` of the gateway (README round 35).
    ...(process.env.GW_NODE_OPTIONS ? { NODE_OPTIONS: process.env.GW_NODE_OPTIONS } : {}),
  },
});
try {
  const gateway = cluster.gateways[0]!;
  const pid = gateway.pid!;
  const a = api(cluster.url, cluster.devKey);
  const connection = await pingConnection(a, port);
  const client = createGatewayClient({
    urls: [gateway.internalUrl!],
    token: cluster.env.ISLET_INTERNAL_TOKEN!,
    maxTries: 1,
  });
  const newRun = async () => {
    const res = await a('POST', '/v1/runs', {
      code: 'return 1',
      description: 'Benchmark the gateway serving calls',
      sessionId: 'gw-calls',
      connections: [connection],
    });
    const id = (res.body as { id?: string }).id;
    if (!id) throw new Error(`no run: ${JSON.stringify(res.body)}`);
    return id;
  };
  /** A client's calls, each on its run until the run has PER_RUN of them. */
  const caller = () => {
    let runId = '';
    let index = PER_RUN;
    const call = async () => {
      if (index >= PER_RUN) {
        runId = await newRun();
        index = 0;
      }
      const live = await client.call(runId, 1, {
        index: index++,
        binding: 'bench.ping',
        argsJson: '{"i":1}',
      });
      if (live.outcome.type !== 'result') throw new Error(`call ended ${JSON.stringify(live.outcome)}`);
    };
    return {
      call,
      /** Room for `n` more calls on the current run (a batch stays on one run). */
      room: async (n: number) => {
        if (index + n > PER_RUN) {
          runId = await newRun();
          index = 0;
        }
      },
    };
  };
  const lone = async (calls: number) => {
    const each = Math.ceil(calls / CLIENTS);
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const c = caller();
        for (let i = 0; i < each; i++) await c.call();
      }),
    );
    return each * CLIENTS;
  };
  const batches = async (count: number) => {
    const c = caller();
    for (let b = 0; b < count; b++) {
      await c.room(100);
      await Promise.all(Array.from({ length: 100 }, c.call));
    }
    return count * 100;
  };
  const report = (label: string, calls: number, s0: Sample, s1: Sample) => {
    const per = (k: keyof Sample, digits = 1) => ((s1[k] - s0[k]) / calls).toFixed(digits);
    console.log(
      `${label}: ${calls} calls; gateway CPU a call, µs: main thread ${per('mainUs')}, process ${per('allUs')}; ` +
        `main-thread wake-ups ${per('wakes', 2)}; syscalls ${per('reads', 2)} reads + ${per('writes', 2)} writes; ` +
        `this process (client + App) ${per('ownUs')} µs; wall ${(((s1.at - s0.at) * 1000) / calls).toFixed(1)} µs a call`,
    );
  };
  // Warm-up: the gateway compiles its hot code and fills its caches (runs, connection).
  await lone(600);
  await batches(5);
  if (ALLOC) process.kill(pid, 'SIGUSR2');
  const redis = AOF ? createRedis(cluster.redisUrl) : undefined;
  const aofFile = redis ? await aofFileOf(redis) : '';
  const aofFrom = redis ? statSync(aofFile).size : 0;
  const s0 = sample(pid);
  const loneCalls = await lone(N);
  const s1 = sample(pid);
  if (redis) {
    const bytes = readFileSync(aofFile).subarray(aofFrom);
    const blocks = parse(bytes);
    console.log(`AOF over ${loneCalls} lone calls: ${(bytes.length / loneCalls).toFixed(0)} B a call`);
    crossings(blocks, aofFrom, loneCalls, 'call');
    const byKind = byKindOf(blocks);
    for (const [k, e] of [...byKind].sort((x, y) => y[1].bytes - x[1].bytes).slice(0, 6)) {
      console.log(`  ${k}: ${(e.n / loneCalls).toFixed(2)} a call, ${(e.bytes / e.n).toFixed(0)} B each`);
      for (const [c, n] of [...e.cmds].sort((x, y) => y[1] - x[1]))
        console.log(`      ${(n / e.n).toFixed(0).padStart(6)} B  ${c}`);
    }
    if (process.env.AOF_KEEP) console.log(`AOF file ${aofFile}`);
    redis.disconnect();
  }
  if (ALLOC) process.kill(pid, 'SIGUSR2');
  report(`lone calls, ${CLIENTS} client${CLIENTS > 1 ? 's' : ''}`, loneCalls, s0, s1);
  const s2 = sample(pid);
  const batched = await batches(BATCHES);
  report('100-call batches', batched, s2, sample(pid));
  if (ALLOC) {
    const file = join(dir, `alloc.${pid}.heapprofile`);
    for (let i = 0; i < 100 && !readdirSync(dir).includes(`alloc.${pid}.heapprofile`); i++)
      await new Promise((r) => setTimeout(r, 100));
    console.log(`=== gateway allocations (${file}), per lone call`);
    console.log(summarizeAllocations(file, loneCalls, Number(process.env.TOP ?? 30)));
  }
} finally {
  // AOF_KEEP=<seconds>: the cluster (and its AOF) kept that long for a look at the commands.
  if (process.env.AOF_KEEP) await new Promise((r) => setTimeout(r, Number(process.env.AOF_KEEP) * 1000));
  await cluster.stop();
  app.close();
}
