/**
 * The host's harness code cache is made after a warm-up that runs a run's binding-call path
 * (host.ts `warmHarnessCache`, harness-install.ts `warmHarness`): its program's calls made and their
 * outcomes delivered on this thread as a call-making run's are, so a run's fresh isolate does not
 * compile that path lazily at its first call and first outcome (test/bench/README.md, round 39
 * `first-call`). Real isolated-vm and the real harness; the warm-up's isolate is ours, never a run's.
 */
import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { afterEach, describe, expect, it } from 'vitest';
import { installHarness, WARM_PROGRAM, warmHarness } from './harness-install.ts';

const HARNESS = readFileSync(new URL('./guest/harness.js', import.meta.url), 'utf8');
const isolates: ivm.Isolate[] = [];
afterEach(() => {
  for (const i of isolates.splice(0)) if (!i.isDisposed) i.dispose();
});

function isolate(): ivm.Isolate {
  const made = new ivm.Isolate({ memoryLimit: 64 });
  isolates.push(made);
  return made;
}

/** The harness's code cache compiled in `warmed` after what ran there, bytes. */
function cacheBytes(warmed: ivm.Isolate): number {
  const again = warmed.compileScriptSync(HARNESS, {
    filename: 'islet:harness',
    produceCachedData: true,
  } as ivm.ScriptInfo) as ivm.Script & ivm.CachedDataResult;
  return again.cachedData?.copy().byteLength ?? 0;
}

describe('the harness warm-up runs the binding-call path', () => {
  it('makes its calls, has each outcome delivered, and ends with a value', () => {
    const warm = isolate();
    const ran = warmHarness(warm, warm.createContextSync(), HARNESS);
    expect(WARM_PROGRAM).toContain('apps.warm.up(');
    expect(ran.calls).toEqual([0, 1]);
    expect(ran.delivered).toBe(2);
    expect(ran.done).toBe('value');
  });

  it('leaves a code cache holding more than a warm-up with no call compiled', () => {
    // The base's warm-up: the same program without its calls, nothing delivered.
    const plain = isolate();
    const ignore = () => undefined;
    const { entry } = installHarness(plain, plain.createContextSync(), HARNESS, {
      log: ignore,
      call: ignore,
      done: ignore,
      fail: ignore,
    });
    entry.applySync(undefined, [
      'start',
      'console.log("warm"); return { n: [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, 0) };',
      JSON.stringify({ bindings: ['warm.up', 'warmup'], clockMs: 0, seed: 'warm' }),
      undefined,
      undefined,
      true,
    ]);
    entry.release();
    const warm = isolate();
    warmHarness(warm, warm.createContextSync(), HARNESS);
    expect(cacheBytes(warm)).toBeGreaterThan(cacheBytes(plain));
  });

  it('a run in a fresh isolate compiled from that cache makes its calls and ends as before', () => {
    const warm = isolate();
    warmHarness(warm, warm.createContextSync(), HARNESS);
    const cachedData = (
      warm.compileScriptSync(HARNESS, {
        filename: 'islet:harness',
        produceCachedData: true,
      } as ivm.ScriptInfo) as ivm.Script & ivm.CachedDataResult
    ).cachedData;
    const fresh = isolate();
    const calls: unknown[][] = [];
    const ends: unknown[][] = [];
    const ignore = () => undefined;
    const { entry } = installHarness(
      fresh,
      fresh.createContextSync(),
      HARNESS,
      {
        log: ignore,
        call: (...a: unknown[]) => calls.push(a),
        done: (...a: unknown[]) => ends.push(a),
        fail: ignore,
      },
      cachedData ? { cachedData } : {},
    );
    entry.applySync(undefined, [
      'start',
      'const a = await apps.bench.ping({ i: 1 }); return a.ok',
      JSON.stringify({ bindings: ['bench.ping'], clockMs: 0, seed: 's' }),
      undefined,
      undefined,
      true,
    ]);
    expect(calls).toEqual([[0, 'bench.ping', '{"i":1}']]);
    entry.applySync(undefined, ['result', 0, '{"ok":true}', undefined, undefined, true]);
    expect(ends).toEqual([['value', 'true', false]]);
    entry.release();
  });
});
