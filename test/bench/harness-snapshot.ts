/**
 * `node --no-node-snapshot test/bench/harness-snapshot.ts`: issue 33, round 42 (`harness-snapshot`).
 * Would an isolated-vm startup snapshot holding the harness (its top level run: the fixed clock, the
 * seeded random, the globals removed, console) make a run's fresh isolate cheaper to make? Measured
 * in this process, on this thread's CPU time (`process.threadCpuUsage`), `ROUNDS` interleaved rounds
 * of `RUNS` makes (default 4 × 300), each make disposed after a trivial run's first turn:
 *   base: `new Isolate({ memoryLimit })`, `createContextSync`, the harness from its warmed code cache
 *         installed with the six callbacks (harness-install.ts, as host.ts `prepare`);
 *   snap: `new Isolate({ snapshot, memoryLimit })` from a snapshot whose one script ran the harness
 *         with late-bound callbacks, `createContextSync`, then its `connect` read from the global
 *         (reference), applied once to the six callbacks (it deletes itself from the global first).
 * Also: the snapshot's size and make time, RSS after each kind's rounds, and what the program of a
 * run in each kind sees (clock, random, removed globals, a global left by the run before).
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import ivm from 'isolated-vm';
import { warmHarnessCache } from '../../services/engine/bench/host-like-isolate.ts';
import { installHarness } from '../../services/engine/src/harness-install.ts';

setFlagsFromString('--max-semi-space-size=0');
const RUNS = Number(process.env.RUNS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const MEMORY_MB = 128;
const SOURCE = readFileSync(new URL('../../services/engine/src/guest/harness.js', import.meta.url), 'utf8');
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
const CONFIG = JSON.stringify({ bindings: ['a.b'], clockMs: 1234, seed: 'probe' });

/** The harness run in the snapshot with callbacks bound later, through `connect` (one call, once). */
export const SNAPSHOT_SCRIPT = `globalThis.__islet_connect = (() => {
  let l, lw, c, cw, d, f;
  const enter = (${SOURCE.replace(/;\s*$/, '').replace('delete g.Atomics;', '')})(
    (a, b, x) => l(a, b, x), (a, b, x) => lw(a, b, x), (a, b, x) => c(a, b, x),
    (a, b, x) => cw(a, b, x), (a, b, x) => d(a, b, x), (a, b, x) => f(a, b, x));
  return function connect(L, LW, C, CW, D, F) {
    delete globalThis.__islet_connect;
    // Not in the snapshot: a context made from one with Atomics deleted aborts in V8's bootstrap.
    delete globalThis.Atomics;
    // Nor do these removals survive: V8 installs SharedArrayBuffer and WebAssembly again on a
    // context deserialized from a snapshot (measured: the probe's "snap sees" without these lines).
    delete globalThis.SharedArrayBuffer;
    delete globalThis.WebAssembly;
    if (l !== undefined) throw new Error('connected twice');
    l = L; lw = LW; c = C; cw = CW; d = D; f = F;
    return enter;
  };
})();`;

const cpuMs = () => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
const cache = warmHarnessCache();
const t0 = cpuMs();
/** WARMUP=1: a warm-up script (in the snapshot maker's second context) runs a trivial program and a
 * call's outcome through the harness, so that their functions are compiled in the snapshot. */
const WARMUP = `const n = () => {}; const e = globalThis.__islet_connect(n, n, n, n, n, n);
e('start', 'console.log(1); return (await apps.w.u({ i: 1 })).n + Date.now() + Math.random();', '{"bindings":["w.u"],"clockMs":0,"seed":"w"}', undefined, undefined, true);
e('result', 0, '{"n":1}', undefined, undefined, true);`;
const snapshot =
  process.env.WARMUP === '1'
    ? ivm.Isolate.createSnapshot([{ code: SNAPSHOT_SCRIPT, filename: 'islet:harness' }], WARMUP)
    : ivm.Isolate.createSnapshot([{ code: SNAPSHOT_SCRIPT, filename: 'islet:harness' }]);
const snapMakeMs = cpuMs() - t0;

type Stages = Map<string, number>;
function callbacks(done: (v: unknown) => void) {
  const ignore = () => undefined;
  return {
    log: ignore,
    call: ignore,
    done: (_k: unknown, a: unknown) => done(a),
    fail: (m: unknown, d: unknown) => done(`fail ${String(m)} ${String(d)}`),
  };
}

function make(kind: 'base' | 'snap', lap: (s: string) => void, done: (v: unknown) => void) {
  const isolate =
    kind === 'base'
      ? new ivm.Isolate({ memoryLimit: MEMORY_MB })
      : new ivm.Isolate({ memoryLimit: MEMORY_MB, snapshot });
  lap('isolate');
  const context = isolate.createContextSync();
  lap('context');
  const cb = callbacks(done);
  let entry: ivm.Reference;
  if (kind === 'base') {
    entry = installHarness(isolate, context, SOURCE, cb, { cachedData: cache }).entry;
  } else {
    const connect = context.global.getSync('__islet_connect', { reference: true }) as ivm.Reference;
    entry = connect.applySync(
      undefined,
      [
        new ivm.Callback(cb.log, { ignored: true }),
        new ivm.Callback(cb.log, { sync: true }),
        new ivm.Callback(cb.call, { ignored: true }),
        new ivm.Callback(cb.call, { sync: true }),
        new ivm.Callback(cb.done, { sync: true }),
        new ivm.Callback(cb.fail, { sync: true }),
      ],
      { result: { reference: true } },
    ) as ivm.Reference;
    connect.release();
  }
  lap('harness');
  return { isolate, context, entry };
}

function run(kind: 'base' | 'snap', stages: Stages, program = PROGRAM): unknown {
  let t = cpuMs();
  const lap = (s: string) => {
    const now = cpuMs();
    stages.set(s, (stages.get(s) ?? 0) + now - t);
    t = now;
  };
  let value: unknown;
  const { isolate, entry } = make(kind, lap, (v) => {
    value = v;
  });
  entry.applySync(undefined, ['start', program, CONFIG, undefined, undefined, true]);
  lap('first turn');
  isolate.dispose();
  lap('dispose');
  return value;
}

// IDLE=base or snap: as an idle host stands (the code cache or the snapshot kept, one isolate made
// ahead and not run), this process's RSS after a settle, then exit. Compare fresh processes.
if (process.env.IDLE === 'base' || process.env.IDLE === 'snap') {
  const ahead = make(
    process.env.IDLE,
    () => undefined,
    () => undefined,
  );
  await new Promise((r) => setTimeout(r, 500));
  console.log(`idle ${process.env.IDLE}: rss ${(process.memoryUsage().rss / 1048576).toFixed(2)} MB`);
  ahead.isolate.dispose();
  process.exit(0);
}
// What a program sees, in each kind: two runs in a row, the second must not see the first.
const SEE =
  'const r = { now: Date.now(), d: new Date().getTime(), rnd: Math.random(), sab: typeof SharedArrayBuffer, atomics: typeof Atomics, wasm: typeof WebAssembly, resize: typeof ArrayBuffer.prototype.resize, console: typeof console.log, connect: typeof globalThis.__islet_connect, left: globalThis.left ?? null, proto: Array.prototype.left ?? null, fmt: new Intl.DateTimeFormat("en", { timeZone: "UTC", hour: "numeric", minute: "numeric", second: "numeric" }).format(), apps: Object.keys(apps).join() }; globalThis.left = 1; Array.prototype.left = 2; Date.now = () => 9; return r;';
for (const kind of ['base', 'snap'] as const) {
  console.log(`${kind} sees: ${String(run(kind, new Map(), SEE))}`);
  console.log(`${kind} sees: ${String(run(kind, new Map(), SEE))}`);
}
const mem = new ivm.Isolate({ memoryLimit: 8, snapshot });
try {
  mem.createContextSync().evalSync('const a = []; for (;;) a.push(new Array(1e5).fill(1));');
} catch (e) {
  console.log(`snap memory limit: ${String(e)}`);
}
if (!mem.isDisposed) mem.dispose();
console.log(`snapshot: ${snapshot.copy().byteLength} B, made in ${snapMakeMs.toFixed(1)} ms CPU`);

const totals = { base: new Map() as Stages, snap: new Map() as Stages };
const rss = { base: [] as number[], snap: [] as number[] };
/** This thread's user and system CPU and the process's minor page faults over each kind's runs (whole runs). */
const split = { base: { user: 0, system: 0, faults: 0 }, snap: { user: 0, system: 0, faults: 0 } };
/** Each round's make (isolate + context + harness) and make + first turn, µs a run: the pairs. */
const rounds = { base: [] as string[], snap: [] as string[] };
const makeOf = (m: Stages) => (m.get('isolate') ?? 0) + (m.get('context') ?? 0) + (m.get('harness') ?? 0);
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of r % 2 === 0 ? (['base', 'snap'] as const) : (['snap', 'base'] as const)) {
    // KIND=base or snap: that kind only (callgrind: instructions a make from two RUNS counts' difference).
    if (process.env.KIND !== undefined && process.env.KIND !== kind) continue;
    for (let i = 0; i < 30; i++) run(kind, new Map());
    const before = makeOf(totals[kind]);
    const u0 = process.threadCpuUsage();
    const f0 = process.resourceUsage().minorPageFault;
    const turnBefore = totals[kind].get('first turn') ?? 0;
    for (let i = 0; i < RUNS; i++)
      if (run(kind, totals[kind]) !== '12') throw new Error(`${kind} run failed`);
    const u1 = process.threadCpuUsage();
    split[kind].user += u1.user - u0.user;
    split[kind].system += u1.system - u0.system;
    split[kind].faults += process.resourceUsage().minorPageFault - f0;
    const make = ((makeOf(totals[kind]) - before) / RUNS) * 1000;
    const turn = (((totals[kind].get('first turn') ?? 0) - turnBefore) / RUNS) * 1000;
    rounds[kind].push(`${make.toFixed(0)}/${(make + turn).toFixed(0)}`);
    rss[kind].push(process.memoryUsage().rss / 1048576);
  }
}
for (const kind of ['base', 'snap'] as const) {
  if (process.env.KIND !== undefined && process.env.KIND !== kind) continue;
  const n = RUNS * ROUNDS;
  let make = 0;
  for (const [stage, ms] of totals[kind]) {
    console.log(`${kind} ${stage.padEnd(12)} ${((ms / n) * 1000).toFixed(1)} µs`);
    if (stage === 'isolate' || stage === 'context' || stage === 'harness') make += ms;
  }
  console.log(
    `${kind} MAKE (isolate+context+harness) ${((make / n) * 1000).toFixed(1)} µs; rss MB ${rss[kind].map((x) => x.toFixed(1)).join(' ')}`,
  );
  const sp = split[kind];
  console.log(
    `${kind} whole run: user ${(sp.user / n).toFixed(1)} µs, system ${(sp.system / n).toFixed(1)} µs, minor faults ${(sp.faults / n).toFixed(1)}`,
  );
  console.log(`${kind} by round (make / make + first turn, µs): ${rounds[kind].join(' ')}`);
}
