/**
 * The guest harness installed in a fresh isolate's context: its script compiled (from the host's
 * code cache when there is one) and run, which yields its `install` function, and `install` applied
 * once to the host's callbacks, which yields the harness's one entry point (`enter`, harness.js).
 * Three calls into the isolate (compile, run, apply); until round 38 the callbacks went in as six
 * globals (`setSync`) that the harness deleted, and its two entry points came out as two globals read
 * (`getSync`) and deleted (`deleteSync`): thirteen (test/bench/README.md, round 38 `host-cpu`).
 * Used by the host (host.ts) and by the tests and benches that stand in for it.
 */
import type ivm from 'isolated-vm';
import { isolatedVm } from './host-ivm.ts';

/** What the harness hands to the host; every callback never throws and takes strings and numbers. */
export interface HarnessCallbacks {
  log(level: unknown, text: unknown): void;
  call(id: unknown, binding: unknown, argsJson: unknown): void;
  done(kind: unknown, a: unknown, b: unknown): void;
  fail(message: unknown, details: unknown): void;
  /** The waited hand-overs' own functions when they must differ (a test telling them apart); else `log` and `call`. */
  logWait?(level: unknown, text: unknown): void;
  callWait?(id: unknown, binding: unknown, argsJson: unknown): void;
}

export interface HarnessInstalled {
  /** `enter('start', code, configJson, undefined, undefined, onHostThread)`, or a call's outcome. */
  readonly entry: ivm.Reference;
  /** The compile's own code cache when it was asked for (`produceCachedData`). */
  readonly cachedData: ivm.ExternalCopy<ArrayBuffer> | undefined;
}

/**
 * Installs the harness `source` in `context` with `cb` as its callbacks. In later turns (call
 * results, on isolated-vm's thread) log lines and calls are handed over without that thread waiting
 * (`ignored`): they run here in order, before the end of the turn (one task queue, first in, first
 * out), and the harness waits (`…Wait`) often enough to bound what is queued. In the first turn, on
 * this thread, the harness uses only the waited ones. Synchronous: the isolate is idle and ours
 * alone, and each async step would cost a thread hop.
 */
export function installHarness(
  isolate: ivm.Isolate,
  context: ivm.Context,
  source: string,
  cb: HarnessCallbacks,
  cache: { cachedData?: ivm.ExternalCopy<ArrayBuffer>; produceCachedData?: boolean } = {},
): HarnessInstalled {
  // ScriptInfo's type omits the cache options that compileScript accepts and reports.
  const script = isolate.compileScriptSync(source, {
    filename: 'islet:harness',
    ...cache,
  } as ivm.ScriptInfo) as ivm.Script & ivm.CachedDataResult;
  const install = script.runSync(context, { reference: true, release: true }) as ivm.Reference;
  try {
    const entry = install.applySync(
      undefined,
      [
        new isolatedVm.Callback(cb.log, { ignored: true }),
        new isolatedVm.Callback(cb.logWait ?? cb.log, { sync: true }),
        new isolatedVm.Callback(cb.call, { ignored: true }),
        new isolatedVm.Callback(cb.callWait ?? cb.call, { sync: true }),
        new isolatedVm.Callback(cb.done, { sync: true }),
        new isolatedVm.Callback(cb.fail, { sync: true }),
      ],
      { result: { reference: true } },
    ) as ivm.Reference;
    return { entry, cachedData: script.cachedData };
  } finally {
    install.release();
  }
}

/** Ours, never a tenant's: what the warm-up isolate runs so that a run's harness paths get compiled. */
export const WARM_PROGRAM =
  'console.log("warm"); const d = new Date(); let c = 0; for (let i = 0; i < 2; i++) c += (await apps.warm.up({ i })).n; return { n: [1, 2, 3].map((x) => x * 2).reduce((a, b) => a + b, c), t: d.getTime() + Date.now(), r: Math.random() < 2 };';

/** What `warmHarness` saw the harness do: its calls (ids, in order), outcomes delivered, and its end. */
export interface WarmRun {
  readonly calls: number[];
  readonly delivered: number;
  readonly done: string | undefined;
}

/**
 * Runs WARM_PROGRAM in `context` (a throwaway isolate of the host's: never a run's) as a run of a
 * call-making program goes: the first turn on this thread, then each call answered by a `result`
 * applied on this thread (HostRun.deliverResult with a deadline, every call-making run's path).
 * The code cache compiled after it then holds the binding paths too (the `apps` namespace, a call's
 * encoding and hand-over, an outcome's delivery): a warm program with no call left them to be
 * compiled lazily in every run's fresh isolate, at its first call and its first outcome (~0.2 ms
 * each in the engine alone; test/bench/README.md, round 39 `first-call`).
 */
export function warmHarness(isolate: ivm.Isolate, context: ivm.Context, source: string): WarmRun {
  const calls: number[] = [];
  let done: string | undefined;
  const ignore = () => undefined;
  const { entry } = installHarness(isolate, context, source, {
    log: ignore,
    call: (id) => {
      if (typeof id === 'number') calls.push(id);
    },
    done: (kind) => {
      done = String(kind);
    },
    fail: ignore,
  });
  try {
    entry.applySync(undefined, [
      'start',
      WARM_PROGRAM,
      JSON.stringify({ bindings: ['warm.up', 'warmup'], clockMs: 0, seed: 'warm' }),
      undefined,
      undefined,
      true,
    ]);
    // Each outcome's turn makes the next call (or ends the program) before applySync returns.
    let delivered = 0;
    while (delivered < calls.length && done === undefined)
      entry.applySync(undefined, ['result', calls[delivered++], '{"n":1}', undefined, undefined, true]);
    return { calls, delivered, done };
  } finally {
    entry.release();
  }
}
