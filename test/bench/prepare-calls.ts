/**
 * `node --no-node-snapshot test/bench/prepare-calls.ts`: a sandbox host's isolate made ahead and run,
 * two ways alternated in this process (process CPU, µs, p50 and mean of `RUNS`, default 1000 each):
 *   base  the harness of round 37 (`BASE_HARNESS`, a copy of main's `guest/harness.js`), installed as
 *         host.ts did: six `setSync` of its callbacks, compile (from its warmed cache), run, two
 *         `getSync` of its entry points, two `deleteSync`; its start by `applySync`
 *   head  the harness installed by harness-install.ts: compile, run, one `applySync` of `install`
 * Each: `prepare` (isolate, context, harness), then the first turn of a trivial program whose `done`
 * disposes the isolate (as host-run.ts `finish`), and the whole. (isolated-vm's objects are frozen:
 * the calls into the isolate are counted from the code, `CALLS`.)
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { installHarness } from '../../services/engine/src/harness-install.ts';

const RUNS = Number(process.env.RUNS ?? 1000);
const HEAD = readFileSync(new URL('../../services/engine/src/guest/harness.js', import.meta.url), 'utf8');
const BASE = readFileSync(process.env.BASE_HARNESS ?? '/tmp/hc/harness-base.js', 'utf8');
const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
const CONFIG = JSON.stringify({ bindings: [], clockMs: 1792486800000, seed: 'run-8f1c' });
const WARM =
  'console.log("warm"); const d = new Date(); return { n: [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, 0), t: d.getTime() + Date.now(), r: Math.random() < 2 };';
const WARM_CONFIG = JSON.stringify({ bindings: ['warm.up', 'warmup'], clockMs: 0, seed: 'warm' });
type Cache = ivm.ExternalCopy<ArrayBuffer>;
type CachedScript = ivm.Script & ivm.CachedDataResult;

/** Calls into the isolate a prepare makes (createContextSync included), by the code below. */
const CALLS = { base: 13, head: 4 };

interface Made {
  isolate: ivm.Isolate;
  start: (program: string, config: string) => void;
  sink: { done: () => void };
}

function makeBase(cache: Cache | undefined): Made & { script: CachedScript } {
  const isolate = new ivm.Isolate({ memoryLimit: 512 });
  const context = isolate.createContextSync();
  const sink = { done: (): void => undefined };
  const g = context.global;
  const ignore = () => undefined;
  g.setSync('__islet_log', new ivm.Callback(ignore, { ignored: true }));
  g.setSync('__islet_log_wait', new ivm.Callback(ignore, { sync: true }));
  g.setSync('__islet_call', new ivm.Callback(ignore, { ignored: true }));
  g.setSync('__islet_call_wait', new ivm.Callback(ignore, { sync: true }));
  g.setSync('__islet_done', new ivm.Callback(() => sink.done(), { sync: true }));
  g.setSync('__islet_fail', new ivm.Callback(ignore, { sync: true }));
  const script = isolate.compileScriptSync(BASE, {
    filename: 'islet:harness',
    ...(cache ? { cachedData: cache } : {}),
  } as ivm.ScriptInfo) as CachedScript;
  script.runSync(context);
  const start = g.getSync('__islet_start', { reference: true }) as ivm.Reference;
  g.getSync('__islet_deliver', { reference: true });
  g.deleteSync('__islet_start');
  g.deleteSync('__islet_deliver');
  return {
    isolate,
    script,
    sink,
    start: (p, c) => start.applySync(undefined, [p, c, true]),
  };
}

function makeHead(cache: Cache | undefined): Made {
  const isolate = new ivm.Isolate({ memoryLimit: 512 });
  const context = isolate.createContextSync();
  const sink = { done: (): void => undefined };
  const ignore = () => undefined;
  const { entry } = installHarness(
    isolate,
    context,
    HEAD,
    { log: ignore, call: ignore, done: () => sink.done(), fail: ignore },
    cache ? { cachedData: cache } : {},
  );
  return {
    isolate,
    sink,
    start: (p, c) => entry.applySync(undefined, ['start', p, c, undefined, undefined, true]),
  };
}

/** The host's warmed cache: the harness run once, then compiled again. */
function warm(make: (c: Cache | undefined) => Made, source: string): Cache {
  const m = make(undefined);
  m.start(WARM, WARM_CONFIG);
  const again = m.isolate.compileScriptSync(source, {
    filename: 'islet:harness',
    produceCachedData: true,
  } as ivm.ScriptInfo) as CachedScript;
  m.isolate.dispose();
  if (!again.cachedData) throw new Error('no cache');
  return again.cachedData;
}
const caches = { base: warm(makeBase, BASE), head: warm(makeHead, HEAD) };
const makers = { base: makeBase, head: makeHead };
/**
 * The process's CPU, µs: precise to the µs (the current thread's share read live), where this
 * thread's own getrusage and schedstat move only at ticks and switches. The other threads idle here.
 */
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const rows: Record<'base' | 'head', { prepare: number[]; turn: number[] }> = {
  base: { prepare: [], turn: [] },
  head: { prepare: [], turn: [] },
};
for (let i = 0; i < RUNS + 200; i++) {
  for (const side of i % 2 === 0 ? (['base', 'head'] as const) : (['head', 'base'] as const)) {
    const t0 = cpu();
    const m = makers[side](caches[side]);
    const t1 = cpu();
    m.sink.done = () => m.isolate.dispose();
    try {
      m.start(PROGRAM, CONFIG);
    } catch {
      // the dispose from `done` ends the turn with an error, as in the host
    }
    const t2 = cpu();
    if (i < 200) continue;
    rows[side].prepare.push(t1 - t0);
    rows[side].turn.push(t2 - t1);
  }
}
const p50 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const f = (a: number[]) => `${p50(a).toFixed(0)} / ${mean(a).toFixed(0)}`;
console.log(
  `prepare-calls: ${RUNS} each, process CPU µs p50 / mean, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
);
for (const side of ['base', 'head'] as const) {
  const r = rows[side];
  const whole = r.prepare.map((x, k) => x + r.turn[k]!);
  console.log(
    `  ${side}: prepare ${f(r.prepare)} (calls into the isolate ${CALLS[side]}); first turn + dispose ${f(r.turn)}; whole ${f(whole)}`,
  );
}
