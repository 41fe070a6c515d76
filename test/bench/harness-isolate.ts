/**
 * The set-up the isolate probes share (dispose-ways.ts, teardown-steps.ts): the engine's harness
 * installed in a fresh isolate as the host installs it, from the host's warmed code cache, and a
 * trivial program and its config. Not product code: a bench probe's fixture.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { installHarness } from '../../services/engine/src/harness-install.ts';

export const HARNESS = readFileSync(
  new URL('../../services/engine/src/guest/harness.js', import.meta.url),
  'utf8',
);
export const PROGRAM = 'const x = [1, 2, 3].map((n) => n * 2); return x.reduce((a, b) => a + b, 0);';
export const CONFIG = JSON.stringify({ bindings: [], clockMs: 1792486800000, seed: 'run-8f1c' });
const WARM =
  'console.log("warm"); const d = new Date(); return { n: [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, 0), t: d.getTime() + Date.now(), r: Math.random() < 2 };';
const WARM_CONFIG = JSON.stringify({ bindings: ['warm.up', 'warmup'], clockMs: 0, seed: 'warm' });
export type Cache = ivm.ExternalCopy<ArrayBuffer>;

/** A fresh isolate (128 MB) with the harness installed; `sink.done` is what the program's end calls. */
export function make(cache: Cache | undefined) {
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  const context = isolate.createContextSync();
  const sink = { done: (): void => undefined };
  const ignore = () => undefined;
  const { entry } = installHarness(
    isolate,
    context,
    HARNESS,
    { log: ignore, call: ignore, done: () => sink.done(), fail: ignore },
    cache ? { cachedData: cache } : {},
  );
  return { isolate, context, entry, sink };
}

/** The host's warmed cache: the harness run once, then compiled again. */
export function warmedCache(): Cache {
  const m = make(undefined);
  m.entry.applySync(undefined, ['start', WARM, WARM_CONFIG, undefined, undefined, true]);
  const again = m.isolate.compileScriptSync(HARNESS, {
    filename: 'islet:harness',
    produceCachedData: true,
  } as ivm.ScriptInfo) as ivm.Script & ivm.CachedDataResult;
  m.isolate.dispose();
  if (!again.cachedData) throw new Error('no cache');
  return again.cachedData;
}
