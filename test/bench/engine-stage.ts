/**
 * `node test/bench/engine-stage.ts`: the one-client engine stage ("engine: isolate ready + program +
 * result back") taken apart on one clock (CLOCK_MONOTONIC in both processes): sequential trivial
 * runs through the engine alone, `GAP` ms apart (default 5: each run finds its host idle with its
 * next isolate made, as a sequential HTTP client's runs do), with the runner's options (a deadline,
 * memory and output limits, a clock, a seed, an abort signal, a partition). Per run: `execute`
 * called → the run frame written to the host's pipe → the host reads it → its first
 * `applySync` (the program's first turn) entered → the `done` frame written → that `applySync`
 * back → the engine reads the frame → `execute` resolved; the host's stamps and its isolated-vm
 * calls by method come from `engine-stage-preload.mjs` (NODE_OPTIONS of the host). Prints p50 of
 * each hop, the sum's p50, and the isolated-vm calls a run (in the run and ahead of it).
 * `RUNS` (default 1000) after `WARM` (default 100).
 */

/**
 * `node test/bench/engine-stage.ts`: the one-client engine stage ("engine: isolate ready + program +
 * result back") taken apart on one clock (CLOCK_MONOTONIC in both processes): sequential trivial
 * runs through the engine alone, `GAP` ms apart (default 5: each run finds its host idle with its
 * next isolate made, as a sequential HTTP client's runs do), with the runner's options (a deadline,
 * memory and output limits, a clock, a seed, an abort signal, a partition). Per run: `execute`
 * called → the run frame written to the host's pipe → the host reads it → its first
 * `applySync` (the program's first turn) entered → the `done` frame written → that `applySync`
 * back → the engine reads the frame → `execute` resolved; the host's stamps and its isolated-vm
 * calls by method come from `engine-stage-preload.mjs` (NODE_OPTIONS of the host). Prints p50 of
 * each hop, the sum's p50, and the isolated-vm calls a run (in the run and ahead of it).
 * `RUNS` (default 1000) after `WARM` (default 100).
 */
import fs, { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createEngine } from '@islet/engine';
import { FrameReader } from '../../services/engine/src/frame.ts';
import { PROGRAM, pct } from './baselines.ts';
import { trivialRunOptions as opts } from './engine-run-options.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const WARM = Number(process.env.WARM ?? 100);
const GAP = Number(process.env.GAP ?? 5);
const OUT = `/tmp/engine-stage-${process.pid}.jsonl`;
const now = () => Number(process.hrtime.bigint()) / 1000;

interface Row {
  e0: number;
  /** The last run's `execute` resolved → this one called, µs. */
  gap?: number;
  writeAt?: number;
  written?: number;
  read?: number;
  e3?: number;
}
let row: Row | undefined;
const rows: Row[] = [];
// This process's (the engine's) garbage collections on the same clock, µs.
const engineGcs: [number, number][] = [];
const perfOffsetUs = now() - performance.now() * 1000;
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    engineGcs.push([perfOffsetUs + e.startTime * 1000, perfOffsetUs + (e.startTime + e.duration) * 1000]);
}).observe({ entryTypes: ['gc'] });
const wrap = <F extends (...a: never[]) => unknown>(f: F): F =>
  function (this: unknown, ...args: Parameters<F>) {
    if (row && row.writeAt === undefined) row.writeAt = now();
    const r = f.apply(this, args);
    if (row && row.written === undefined) row.written = now();
    return r;
  } as F;
fs.writeSync = wrap(fs.writeSync);
fs.writevSync = wrap(fs.writevSync);
syncBuiltinESMExports();
const push = FrameReader.prototype.push;
FrameReader.prototype.push = function (chunk: Buffer) {
  if (row && row.written !== undefined && row.read === undefined) row.read = now();
  return push.call(this, chunk);
};

const preload = fileURLToPath(new URL('./engine-stage-preload.mjs', import.meta.url));
const ivmPath = createRequire(new URL('../../services/engine/src/host.ts', import.meta.url)).resolve(
  'isolated-vm',
);
const engine = createEngine({
  // IDLE=2: a second host a partition allowed, as the runner's engine (round 43 `engine-floor`).
  maxIdlePerPartition: Number(process.env.IDLE ?? 1),
  maxRunsPerProcess: 1_000_000,
  maxHostResidentGrowthBytes: 2 ** 40,
  hostEnv: { NODE_OPTIONS: `--import ${preload}`, STAGE_OUT: OUT, STAGE_IVM: ivmPath },
});
/** ns on a CPU of every thread of a process (schedstat), or of this process's main thread. */
const cpuNs = (pid: number | 'self') => {
  let sum = 0;
  const dir = pid === 'self' ? '/proc/thread-self' : `/proc/${pid}`;
  if (pid === 'self') return Number(readFileSync(`${dir}/schedstat`, 'utf8').split(' ')[0]);
  for (const t of readdirSync(`${dir}/task`))
    sum += Number(readFileSync(`${dir}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  return sum;
};
/** ns on a CPU of each thread of a process by its name (`THREADS=1`). */
const byThread = (pid: number) => {
  const out: Record<string, number> = {};
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const name = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
    out[name] =
      (out[name] ?? 0) + Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  }
  return out;
};
/** The host's main thread's voluntary and involuntary context switches (its wake-ups, its preemptions). */
const switches = (pid: number): [number, number] => {
  const st = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  const n = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(st)?.[1] ?? Number.NaN);
  return [n('voluntary_ctxt_switches'), n('nonvoluntary_ctxt_switches')];
};
let switchesAt: [number, number] = [0, 0];
let switchesEnd: [number, number] = [0, 0];
let threadsAt: Record<string, number> = {};
let threadsEnd: Record<string, number> = {};
let hostPid = 0;
let cpuAt: { self: number; host: number } | undefined;
let cpuEnd: { self: number; host: number } | undefined;
try {
  for (let i = 0; i < WARM + RUNS; i++) {
    if (i === WARM) {
      cpuAt = { self: cpuNs('self'), host: cpuNs(hostPid) };
      threadsAt = byThread(hostPid);
      switchesAt = switches(hostPid);
    }
    await new Promise((r) => setTimeout(r, GAP));
    row = { e0: now(), ...(rows.length > 0 ? { gap: now() - rows[rows.length - 1]!.e3! } : {}) };
    const out = await engine.execute(PROGRAM, opts());
    row.e3 = now();
    hostPid = out.hostPid ?? 0;
    if (out.valueJson !== '12') throw new Error(`run failed: ${JSON.stringify(out.failure)}`);
    if (i >= WARM) rows.push(row);
    row = undefined;
  }
  cpuEnd = { self: cpuNs('self'), host: cpuNs(hostPid) };
  threadsEnd = byThread(hostPid);
  switchesEnd = switches(hostPid);
  await new Promise((r) => setTimeout(r, 200));
} finally {
  await engine.close();
}
if (!existsSync(OUT)) throw new Error('no host stamps (is the preload loaded?)');
const host = readFileSync(OUT, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));
rmSync(OUT);
host.sort((x, y) => x.inAt - y.inAt);
const hops: Record<string, number[]> = {};
const add = (k: string, v: number) => {
  hops[k] ??= [];
  hops[k].push(v);
};
let matched = 0;
let collided = 0;
const hostGcs: [number, number][] = host.flatMap((h) => h.gcs ?? []);
const overlaps = (list: [number, number][], from: number, to: number) =>
  list.some(([a, b]) => a < to && b > from);
/** Each matched run's total and what met it (the slow runs' common causes, counted below). */
const met: {
  total: number;
  own: boolean;
  after: boolean;
  /** The engine read `done` only after the host's `applySync` came back (its teardown over). */
  teardown: boolean;
  hostGc: boolean;
  engineGc: boolean;
  gap: number;
}[] = [];
const misses: Row[] = [];
const inRun: Record<string, number> = {};
const ahead: Record<string, number> = {};
for (let i = 0; i < rows.length; i++) {
  const e = rows[i]!;
  if (e.written === undefined || e.read === undefined || e.e3 === undefined) continue;
  // the host's row of this run: read after the frame was written, its done written before the engine read it
  const h = host.find((x) => x.inAt > e.writeAt! && x.inAt < e.read! && x.doneAt <= e.read!);
  if (!h) {
    misses.push(e);
    continue;
  }
  matched++;
  // The run's frame written while its host was still making the isolate ahead (one clock).
  if (h.makeFrom !== undefined && h.makeFrom < e.writeAt! && h.makeTo > e.writeAt!) {
    collided++;
    add('(a collided run: frame written → its isolate made)', h.makeTo - e.writeAt!);
  }
  if (h.makeFrom !== undefined && h.makeTo !== undefined)
    add('(the make ahead, wall)', h.makeTo - h.makeFrom);
  add('execute called → run frame write entered', e.writeAt! - e.e0);
  add('(run frame write, the syscall)', e.written - e.writeAt!);
  add('write entered → host reads it', h.inAt - e.writeAt!);
  add('host read → first applySync entered', h.applyAt - h.inAt);
  add('applySync entered → done callback', h.callbackAt - h.applyAt);
  add('done callback → done frame written', h.doneAt - h.callbackAt);
  add('(done write, the syscall)', h.doneWritten - h.doneAt);
  add('done write entered → engine reads it', e.read - h.doneAt);
  add('engine read → execute resolved', e.e3 - e.read);
  if (h.applyBack !== undefined) add('(host: done written → applySync back)', h.applyBack - h.doneWritten);
  add('total', e.e3 - e.e0);
  // The host's next make (after this run's done) begun before the engine had the outcome.
  const nextH = host[host.indexOf(h) + 1];
  met.push({
    total: e.e3 - e.e0,
    own: h.makeFrom !== undefined && h.makeFrom < e.writeAt! && h.makeTo > e.writeAt!,
    after: nextH?.makeFrom !== undefined && nextH.makeFrom < e.e3,
    teardown: h.applyBack !== undefined && e.read > h.applyBack,
    hostGc: overlaps(hostGcs, e.writeAt!, e.e3),
    engineGc: overlaps(engineGcs, e.e0, e.e3),
    gap: e.gap ?? Number.NaN,
  });
  for (const [k, v] of Object.entries(h.calls as Record<string, number>)) inRun[k] = (inRun[k] ?? 0) + v;
  for (const [k, v] of Object.entries((h.ahead ?? {}) as Record<string, number>))
    ahead[k] = (ahead[k] ?? 0) + v;
}
console.log(`engine stage, one clock: ${matched} of ${rows.length} runs matched, ${GAP} ms apart`);
console.log(
  `  runs whose frame was written while their host made its next isolate: ${collided} of ${matched}`,
);
let sum = 0;
for (const [k, v] of Object.entries(hops)) {
  const p = pct(v, 50);
  if (!k.startsWith('(') && k !== 'total' && !k.startsWith('done write (')) sum += p;
  console.log(
    `  ${k.padEnd(44)} p50 ${p.toFixed(1).padStart(7)} µs  p90 ${pct(v, 90).toFixed(1).padStart(7)}`,
  );
}
{
  // The runs above the p75 of the total against the rest: what met them, counted.
  const p75 = pct(
    met.map((m) => m.total),
    75,
  );
  const groups = [met.filter((m) => m.total > p75), met.filter((m) => m.total <= p75)];
  const line = (g: typeof met) => {
    const n = (f: (m: (typeof met)[number]) => boolean) => g.filter(f).length;
    const gaps = g.map((m) => m.gap).filter((x) => !Number.isNaN(x));
    return (
      `${g.length} runs: their own isolate still being made ${n((m) => m.own)}, ` +
      `the next make begun before the engine had the outcome ${n((m) => m.after)}, ` +
      `neither ${n((m) => !m.own && !m.after)}, the read after the host's teardown ${n((m) => m.teardown)}, a host GC ${n((m) => m.hostGc)}, an engine GC ${n((m) => m.engineGc)}, ` +
      `none of the four ${n((m) => !m.own && !m.after && !m.hostGc && !m.engineGc)}; gap p50 ${pct(gaps, 50).toFixed(0)} µs`
    );
  };
  console.log(`  slow runs (total > p75 ${p75.toFixed(0)} µs): ${line(groups[0]!)}`);
  console.log(`  the rest: ${line(groups[1]!)}`);
}
if (process.env.DEBUG)
  console.log(host.length, JSON.stringify(misses.slice(0, 2)), JSON.stringify(host.slice(-2)));
console.log(`  sum of the p50s ${sum.toFixed(1)} µs`);
if (cpuAt && cpuEnd)
  console.log(
    `  CPU a run (schedstat, 5 ms gaps included): engine's main thread ${((cpuEnd.self - cpuAt.self) / RUNS / 1000).toFixed(1)} µs, ` +
      `the host (every thread, the next isolate made ahead included) ${((cpuEnd.host - cpuAt.host) / RUNS / 1000).toFixed(1)} µs`,
  );
console.log(
  `  the host's CPU a run by thread, µs: ${Object.entries(threadsEnd)
    .map(([k, v]) => `${k} ${((v - (threadsAt[k] ?? 0)) / RUNS / 1000).toFixed(1)}`)
    .join(', ')}`,
);
console.log(
  `  the host's main thread a run: wake-ups (voluntary switches) ${((switchesEnd[0] - switchesAt[0]) / RUNS).toFixed(2)}, ` +
    `preempted (involuntary) ${((switchesEnd[1] - switchesAt[1]) / RUNS).toFixed(2)}`,
);
const per = (o: Record<string, number>) =>
  Object.entries(o)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${(v / matched).toFixed(2)}`)
    .join(', ');
console.log(`  isolated-vm calls a run, in the run (frame in → done out): ${per(inRun)}`);
console.log(`  … between runs (the last run's teardown, the next isolate made ahead): ${per(ahead)}`);
process.exit(0);
