/**
 * `node --no-node-snapshot test/bench/engine-floor.ts`: the floor under the engine stage, in one
 * process: the trivial program run in an isolate made ahead, per step, µs (p50 of `RUNS`, default
 * 2000, each in its own fresh isolate made before the clock starts, disposed after it stops):
 *   raw      one `evalSync` of the program as a plain function, its JSON text back (one ivm call)
 *   raw-async one `evalSync` with the program as an async function's body (as the engine runs it),
 *            the completion's text handed out by a sync Callback
 *   harness  the host's path: the harness installed ahead (as host.ts `prepare`), then its
 *            entry's start (harness-install.ts) by `applySync` on this thread, `done` by its sync callback
 *   harness+dispose  the same with the isolate disposed from the `done` callback (as the host does)
 * `STEPS=1` also times the harness's start in parts (config, clock, seed, deletes, apps, compile, run).
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { installHarness } from '../../services/engine/src/harness-install.ts';
import { PROGRAM, pct } from './baselines.ts';

const RUNS = Number(process.env.RUNS ?? 2000);
const HARNESS = readFileSync(
  process.env.HARNESS ?? new URL('../../services/engine/src/guest/harness.js', import.meta.url),
  'utf8',
);
const CONFIG = JSON.stringify({ bindings: [], clockMs: 1792486800000, seed: 'run-8f1c' });
const now = () => Number(process.hrtime.bigint()) / 1000;

interface Made {
  isolate: ivm.Isolate;
  context: ivm.Context;
  start?: ivm.Reference;
  sink: { done?: (k: unknown, a: unknown) => void };
}
let cache: ivm.ExternalCopy<ArrayBuffer> | undefined;
function make(harness: boolean): Made {
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  const context = isolate.createContextSync();
  const sink: Made['sink'] = {};
  const ignore = () => undefined;
  const done = (k: unknown, a: unknown) => sink.done?.(k, a);
  if (!harness) {
    // The raw-async mode's `done`, as a global of its own (no harness here).
    context.global.setSync('__islet_done', new ivm.Callback(done, { sync: true }));
    return { isolate, context, sink };
  }
  const { entry, cachedData } = installHarness(
    isolate,
    context,
    HARNESS,
    { log: ignore, call: ignore, done, fail: ignore },
    cache ? { cachedData: cache } : { produceCachedData: true },
  );
  if (!cache && cachedData) cache = cachedData;
  return { isolate, context, start: entry, sink };
}

// The host's warmed cache (host.ts warmHarnessCache): the harness run once, then compiled again.
{
  const m = make(true);
  m.sink.done = () => undefined;
  m.start!.applySync(undefined, [
    'start',
    'return [1, 2].map((x) => x * 2);',
    CONFIG,
    undefined,
    undefined,
    true,
  ]);
  const again = m.isolate.compileScriptSync(HARNESS, {
    filename: 'islet:harness',
    produceCachedData: true,
  } as ivm.ScriptInfo) as ivm.Script & ivm.CachedDataResult;
  if (again.cachedData) cache = again.cachedData;
  m.isolate.dispose();
}
const times: Record<string, number[]> = {};
const stamp = (name: string, us: number) => {
  times[name] ??= [];
  times[name].push(us);
};
const modes: Record<string, (m: Made) => unknown> = {
  raw: (m) => m.context.evalSync(`JSON.stringify((() => { ${PROGRAM} })())`),
  'raw-async': (m) => {
    let out: unknown;
    m.sink.done = (_k, a) => {
      out = a;
    };
    m.context.evalSync(
      `(async () => { ${PROGRAM} })().then((v) => __islet_done('value', JSON.stringify(v)))`,
    );
    return out;
  },
  harness: (m) => {
    let out: unknown;
    m.sink.done = (_k, a) => {
      out = a;
    };
    m.start!.applySync(undefined, ['start', PROGRAM, CONFIG, undefined, undefined, true], {
      timeout: 120_000,
    });
    return out;
  },
  'harness+dispose': (m) => {
    let out: unknown;
    m.sink.done = (_k, a) => {
      out = a;
      const t = now();
      stamp('(to the done callback)', t - t0);
      m.isolate.dispose();
      stamp('(the dispose() call)', now() - t);
    };
    const t0 = now();
    try {
      m.start!.applySync(undefined, ['start', PROGRAM, CONFIG, undefined, undefined, true], {
        timeout: 120_000,
      });
    } catch {}
    return out;
  },
};
for (let i = 0; i < RUNS + 200; i++) {
  for (const [name, f] of Object.entries(modes)) {
    const m = make(name.startsWith('harness'));
    const t0 = now();
    const out = f(m);
    const t1 = now();
    if (out !== '12') throw new Error(`${name}: ${String(out)}`);
    if (!m.isolate.isDisposed) m.isolate.dispose();
    if (i >= 200) stamp(name, t1 - t0);
  }
}
for (const [name, t] of Object.entries(times))
  console.log(
    `${name.padEnd(16)} p50 ${pct(t, 50).toFixed(1).padStart(6)} µs  p90 ${pct(t, 90).toFixed(1).padStart(6)}`,
  );
