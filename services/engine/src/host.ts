/**
 * The sandbox host process: `node --no-node-snapshot host.ts`, started by the engine (possibly under
 * the kernel sandbox launcher). It hosts one isolate at a time, a fresh one per run, and talks to the
 * engine only through frames on stdin/stdout. Every callback the isolate can reach is synchronous,
 * never throws and accepts only strings and numbers; anything else ends the run.
 */
import type ivm from 'isolated-vm';
import { FrameReader } from './frame.ts';
import { installHarness, warmHarness } from './harness-install.ts';
import { readStdinFrames } from './host-input.ts';
import { isolatedVm } from './host-ivm.ts';
import { send } from './host-output.ts';
import { HostRun, type Prepared } from './host-run.ts';
import { DEFAULT_MEMORY_MB, releaseHostSemiSpaceFlag } from './limits.ts';
import { NextIsolate } from './next-isolate.ts';
import type { ToHost } from './wire.ts';

// Node's builtins by `getBuiltinModule`, not `import`: an import of a builtin makes its ES module
// facade, which reads every export, getters included (node:fs's `promises` loaded fs/promises,
// readline and the REPL's history, ~26 M instructions of a host's start, compiled from source in a
// process without Node's snapshot; test/bench/README.md, round 39 `host-start`).
const { readFileSync } = process.getBuiltinModule('node:fs');

// `--max-semi-space-size` was for this process's own heap only; programs' isolates come next.
releaseHostSemiSpaceFlag();

// Nothing but frames may reach stdout.
for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
  console[level] = (...args: unknown[]) => process.stderr.write(`${args.map(String).join(' ')}\n`);
}
process.on('unhandledRejection', (reason) => {
  process.stderr.write(`islet host: unhandled rejection: ${String(reason)}\n`);
});

const HARNESS_SOURCE = readFileSync(new URL('./guest/harness.js', import.meta.url), 'utf8');
/** V8 code cache of the harness with the functions a run calls compiled (`warmHarnessCache`). */
let harnessCache: ivm.ExternalCopy<ArrayBuffer> | undefined;

function prepare(memoryMb: number): Prepared {
  const isolate = new isolatedVm.Isolate({ memoryLimit: memoryMb });
  try {
    const sink: Prepared['sink'] = { run: undefined };
    const context = isolate.createContextSync();
    const { entry, cachedData } = installHarness(
      isolate,
      context,
      HARNESS_SOURCE,
      {
        log: (l, t) => sink.run?.onLog(l, t),
        call: (i, b, a) => sink.run?.onCall(i, b, a),
        done: (k, a, b) => sink.run?.onDone(k, a, b),
        fail: (m, d) => sink.run?.onFail(m, d),
      },
      harnessCache ? { cachedData: harnessCache } : { produceCachedData: true },
    );
    if (!harnessCache && cachedData) harnessCache = cachedData;
    return { isolate, context, entry, memoryMb, sink };
  } catch (e) {
    if (!isolate.isDisposed) isolate.dispose();
    throw e;
  }
}

/**
 * Makes `harnessCache` once, at start, in a throwaway isolate that runs only the harness and
 * WARM_PROGRAM with its two calls answered (`warmHarness`, harness-install.ts): compiling the same source again there yields a cache that holds every function
 * that ran. A cache made at the first compile holds only the top level, and each run's fresh
 * isolate then compiled the rest lazily, most of a trivial run's `start` (see
 * docs/decisions/measured-costs.md). No tenant code ever runs in this isolate, and V8 checks a cache against its source.
 */
function warmHarnessCache(): void {
  const isolate = new isolatedVm.Isolate({ memoryLimit: DEFAULT_MEMORY_MB });
  try {
    warmHarness(isolate, isolate.createContextSync(), HARNESS_SOURCE);
    const again = isolate.compileScriptSync(HARNESS_SOURCE, {
      filename: 'islet:harness',
      produceCachedData: true,
    } as ivm.ScriptInfo) as ivm.Script & ivm.CachedDataResult;
    if (again.cachedData) harnessCache = again.cachedData;
  } catch (e) {
    // Runs still work: the first prepare makes a top-level cache as before.
    process.stderr.write(`islet host: could not warm the harness cache: ${String(e)}\n`);
  } finally {
    if (!isolate.isDisposed) isolate.dispose();
  }
}

let current: HostRun | undefined;
/** The isolate for the next run, made while idle; its heap limit is the last run's. */
const next = new NextIsolate<Prepared>(
  prepare,
  (ready) => {
    ready.context.release();
    ready.isolate.dispose();
  },
  (e) => process.stderr.write(`islet host: could not prepare an isolate: ${String(e)}\n`),
);

const reader = new FrameReader((event) => {
  if (event.type === 'error') {
    process.stderr.write(`islet host: ${event.message}\n`);
    process.exit(65);
  }
  const m = event.message as ToHost;
  switch (m.t) {
    case 'run':
      if (current !== undefined) {
        process.stderr.write('islet host: run while another run is active\n');
        process.exit(65);
      }
      try {
        const memoryMb = m.memoryMb;
        current = new HostRun(
          m,
          next.take(memoryMb),
          () => {
            current = undefined;
            next.afterRun(memoryMb);
          },
          undefined,
          // The next make waits for the engine's `prepare` (next-isolate.ts `afterRun`).
          true,
        );
      } catch (e) {
        send({
          t: 'done',
          status: 'failed',
          kind: 'sandbox-unavailable',
          message: `the sandbox could not create an isolate: ${e instanceof Error ? e.message : String(e)}`,
        });
        break;
      }
      current.start();
      break;
    case 'result':
    case 'error':
      current?.deliverResult(m);
      break;
    case 'end':
      current?.end(m.kind);
      break;
    case 'prepare':
      // The engine has the last run's outcome: the next isolate, held for it (`done`'s `held`).
      if (current === undefined) next.release();
      break;
    default:
      process.stderr.write('islet host: unknown message\n');
      process.exit(65);
  }
});

// Read as it arrives, not through stdin's stream (host-input.ts).
readStdinFrames(reader, () => process.exit(0));
warmHarnessCache();
send({ t: 'ready', pid: process.pid });
next.atStart(DEFAULT_MEMORY_MB);
