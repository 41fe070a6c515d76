/**
 * A host-like isolate for the benches, as host.ts prepares and runs one: isolate at the run's heap
 * limit, context, the six callbacks, the harness from its warmed code cache, its top level, the two
 * references, a program's first turn ending in a dispose from `done`.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';

type Cache = ivm.ExternalCopy<ArrayBuffer>;
type CachedScript = ivm.Script & { cachedData?: Cache; cachedDataRejected?: boolean };

const SOURCE = readFileSync(new URL('../src/guest/harness.js', import.meta.url), 'utf8');
export const TRIVIAL_PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
const WARM_PROGRAM =
  'console.log("warm"); const d = new Date(); return { n: [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, 0), t: d.getTime() + Date.now(), r: Math.random() < 2 };';
const CONFIG = JSON.stringify({ bindings: [], clockMs: 0, seed: 'probe' });

function install(context: ivm.Context, done: (value: unknown) => void): void {
  const g = context.global;
  const ignore = () => undefined;
  g.setSync('__islet_log', new ivm.Callback(ignore, { ignored: true }));
  g.setSync('__islet_log_wait', new ivm.Callback(ignore, { sync: true }));
  g.setSync('__islet_call', new ivm.Callback(ignore, { ignored: true }));
  g.setSync('__islet_call_wait', new ivm.Callback(ignore, { sync: true }));
  g.setSync('__islet_done', new ivm.Callback((_kind: unknown, a: unknown) => done(a), { sync: true }));
  g.setSync('__islet_fail', new ivm.Callback(ignore, { sync: true }));
}

/** The harness's code cache with the functions a run calls compiled, as host.ts warms it. */
export function warmHarnessCache(): Cache {
  const isolate = new ivm.Isolate({ memoryLimit: 512 });
  try {
    const context = isolate.createContextSync();
    install(context, () => undefined);
    isolate.compileScriptSync(SOURCE, { filename: 'islet:harness' }).runSync(context);
    const start = context.global.getSync('__islet_start', { reference: true }) as ivm.Reference;
    const config = JSON.stringify({ bindings: ['warm.up', 'warmup'], clockMs: 0, seed: 'warm' });
    start.applySync(undefined, [WARM_PROGRAM, config, true]);
    const again = isolate.compileScriptSync(SOURCE, {
      filename: 'islet:harness',
      produceCachedData: true,
    } as ivm.ScriptInfo) as CachedScript;
    if (!again.cachedData) throw new Error('no code cache');
    return again.cachedData;
  } finally {
    isolate.dispose();
  }
}

/** The harness's code cache from its first compile: its top level only (what host.ts had before warming). */
export function topLevelHarnessCache(): Cache {
  const isolate = new ivm.Isolate({ memoryLimit: 512 });
  try {
    const script = isolate.compileScriptSync(SOURCE, {
      filename: 'islet:harness',
      produceCachedData: true,
    } as ivm.ScriptInfo) as CachedScript;
    if (!script.cachedData) throw new Error('no code cache');
    return script.cachedData;
  } finally {
    isolate.dispose();
  }
}

/**
 * One trivial run in a fresh host-like isolate; `lap(stage)` is called after each stage.
 * `disposeAfter`: dispose once the first turn returned rather than from `done`.
 */
export function hostLikeRun(
  cache: Cache,
  memoryMb: number,
  lap: (stage: string) => void = () => undefined,
  disposeAfter = false,
): void {
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb });
  let value: unknown;
  try {
    lap('isolate');
    const context = isolate.createContextSync();
    lap('context');
    install(context, (v) => {
      value = v;
      if (!disposeAfter) isolate.dispose();
    });
    lap('callbacks');
    const script = isolate.compileScriptSync(SOURCE, {
      filename: 'islet:harness',
      cachedData: cache,
    } as ivm.ScriptInfo) as CachedScript;
    if (script.cachedDataRejected) throw new Error('code cache rejected');
    lap('harness from its code cache');
    script.runSync(context);
    lap('harness top level');
    const g = context.global;
    const start = g.getSync('__islet_start', { reference: true }) as ivm.Reference;
    g.getSync('__islet_deliver', { reference: true });
    g.deleteSync('__islet_start');
    g.deleteSync('__islet_deliver');
    lap('references');
    try {
      start.applySync(undefined, [TRIVIAL_PROGRAM, CONFIG, true]);
    } catch {
      // the dispose from `done` ends the turn with an error, as in the host
    }
    lap(disposeAfter ? 'first turn' : 'first turn + dispose');
  } finally {
    if (!isolate.isDisposed) isolate.dispose();
  }
  if (disposeAfter) lap('dispose');
  if (value !== '12') throw new Error(`host-like run failed: ${String(value)}`);
}
