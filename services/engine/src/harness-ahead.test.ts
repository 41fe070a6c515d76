/**
 * The guest harness sets up what every run's environment has, whatever the run, when it is
 * evaluated (host.ts `prepare`: in the isolate made ahead, before its run arrives), so a run's
 * start sets only its own clock, seed and bindings. Real isolated-vm and the real harness; no
 * host process. Each run still has its own isolate: the engine's freshness tests
 * (engine-isolate.test.ts) hold, and the runs below each get a new one.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { afterEach, describe, expect, it } from 'vitest';
import { installHarness } from './harness-install.ts';

const HARNESS = readFileSync(new URL('./guest/harness.js', import.meta.url), 'utf8');
const isolates: ivm.Isolate[] = [];
afterEach(() => {
  for (const i of isolates.splice(0)) if (!i.isDisposed) i.dispose();
});

/** A fresh isolate with the harness evaluated, as `prepare` leaves it; `done` hears the program's end. */
function prepared() {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  isolates.push(isolate);
  const context = isolate.createContextSync();
  const ends: unknown[][] = [];
  const ignore = () => undefined;
  const { entry } = installHarness(isolate, context, HARNESS, {
    log: ignore,
    call: ignore,
    done: (...a: unknown[]) => ends.push(a),
    fail: ignore,
  });
  return { context, entry, ends };
}

/** What the environment looks like, read by code of ours in the prepared isolate (no run yet). */
const LOOK = `JSON.stringify({
  sab: typeof SharedArrayBuffer, atomics: typeof Atomics, wasm: typeof WebAssembly,
  resize: typeof ArrayBuffer.prototype.resize, transfer: typeof ArrayBuffer.prototype.transfer,
  console: typeof console.log, now: Date.now(), dateCtor: new Date().constructor === Date,
  random: Math.random.name,
})`;

describe('the harness sets up the run environment ahead', () => {
  it('before any run: no shared memory, no WebAssembly, no growable buffers; console, the fixed clock and the seeded random installed', () => {
    const { context } = prepared();
    expect(JSON.parse(context.evalSync(LOOK) as string)).toEqual({
      sab: 'undefined',
      atomics: 'undefined',
      wasm: 'undefined',
      resize: 'undefined',
      transfer: 'undefined',
      console: 'function',
      now: 0,
      dateCtor: true,
      random: 'random',
    });
  });

  it("a run's start sets its own clock and seed in the environment made ahead", () => {
    const runWith = (clockMs: number, seed: string) => {
      const { entry, ends } = prepared();
      entry.applySync(undefined, [
        'start',
        'return [Date.now(), new Date().getTime(), Math.random(), Math.random()]',
        JSON.stringify({ bindings: [], clockMs, seed }),
        undefined,
        undefined,
        true,
      ]);
      expect(ends).toHaveLength(1);
      expect(ends[0]![0]).toBe('value');
      return JSON.parse(ends[0]![1] as string) as number[];
    };
    const a = runWith(1_792_486_800_000, 'run-1');
    const b = runWith(1_792_486_800_000, 'run-1');
    const c = runWith(5_000, 'run-2');
    expect(a.slice(0, 2)).toEqual([1_792_486_800_000, 1_792_486_800_000]);
    expect(b).toEqual(a);
    expect(c.slice(0, 2)).toEqual([5_000, 5_000]);
    expect(c.slice(2)).not.toEqual(a.slice(2));
  });

  it('the harness script alone only yields `install`; applied once to the callbacks it sets the environment up and leaves no name of its own on the global object', () => {
    const isolate = new ivm.Isolate({ memoryLimit: 64 });
    isolates.push(isolate);
    const context = isolate.createContextSync();
    const globals = `JSON.stringify(Object.getOwnPropertyNames(globalThis).filter((n) => /islet|install|enter/i.test(n)))`;
    const install = isolate
      .compileScriptSync(HARNESS, { filename: 'islet:harness' })
      .runSync(context, { reference: true }) as ivm.Reference;
    // Run, the script made one function and changed nothing: no globals of its own, the environment untouched.
    expect(install.typeof).toBe('function');
    expect(context.evalSync(globals)).toBe('[]');
    expect(context.evalSync('typeof SharedArrayBuffer')).toBe('function');
    const ignore = new ivm.Callback(() => undefined, { sync: true });
    const entry = install.applySync(undefined, [ignore, ignore, ignore, ignore, ignore, ignore], {
      result: { reference: true },
    }) as ivm.Reference;
    expect(entry.typeof).toBe('function');
    expect(context.evalSync(globals)).toBe('[]');
    expect(JSON.parse(context.evalSync(LOOK) as string)).toMatchObject({
      sab: 'undefined',
      console: 'function',
    });
  });
});
