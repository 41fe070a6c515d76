/**
 * A host-like isolate for the benches, as host.ts prepares and runs one: isolate at the run's heap
 * limit, context, the harness from its warmed code cache installed with the six callbacks
 * (harness-install.ts), a program's first turn ending in a dispose from `done`.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { installHarness, warmHarness } from '../src/harness-install.ts';

type Cache = ivm.ExternalCopy<ArrayBuffer>;
type CachedScript = ivm.Script & { cachedData?: Cache; cachedDataRejected?: boolean };

const SOURCE = readFileSync(new URL('../src/guest/harness.js', import.meta.url), 'utf8');
export const TRIVIAL_PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
const CONFIG = JSON.stringify({ bindings: [], clockMs: 0, seed: 'probe' });

const ignore = () => undefined;
const callbacks = (done: (value: unknown) => void) => ({
  log: ignore,
  call: ignore,
  done: (_kind: unknown, a: unknown) => done(a),
  fail: ignore,
});

/** The harness's code cache with the functions a run calls compiled, as host.ts warms it. */
export function warmHarnessCache(): Cache {
  const isolate = new ivm.Isolate({ memoryLimit: 512 });
  try {
    warmHarness(isolate, isolate.createContextSync(), SOURCE);
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
    const { entry } = installHarness(
      isolate,
      context,
      SOURCE,
      callbacks((v) => {
        value = v;
        if (!disposeAfter) isolate.dispose();
      }),
      { cachedData: cache },
    );
    lap('harness from its code cache, installed');
    try {
      entry.applySync(undefined, ['start', TRIVIAL_PROGRAM, CONFIG, undefined, undefined, true]);
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
