// Preloaded into a sandbox host by `test/bench/engine-stage.ts` (NODE_OPTIONS=--import): stamps the
// host's steps of a run on CLOCK_MONOTONIC (process.hrtime, the same clock as the engine side's) and
// counts its isolated-vm calls by method. Bench only; nothing of a run reaches it. Stamps are kept
// in memory and appended to STAGE_OUT every 50 runs, after that run's `done` is out.

// Preloaded into a sandbox host by `test/bench/engine-stage.ts` (NODE_OPTIONS=--import): stamps the
// host's steps of a run on CLOCK_MONOTONIC (process.hrtime, the same clock as the engine side's) and
// counts its isolated-vm calls by method. Bench only; nothing of a run reaches it. Stamps are kept
// in memory and appended to STAGE_OUT every 50 runs, after that run's `done` is out.
import fs, { appendFileSync } from 'node:fs';
import { createRequire, registerHooks } from 'node:module';
import net from 'node:net';
import { PerformanceObserver, performance } from 'node:perf_hooks';

const OUT = process.env.STAGE_OUT;
const require = createRequire(import.meta.url);
const ivm = require(process.env.STAGE_IVM);
// A host started with `--isolated-vm-addon <file>` (round 39, host-ivm.ts) opens the addon itself
// with `process.dlopen`; a second init of it in this process aborts, so it gets the counted exports.
const dlopen = process.dlopen;
process.dlopen = function (module, file, ...rest) {
  if (/isolated[-_]vm[^/]*\.node$/.test(String(file))) {
    module.exports = { ivm: globalThis.__stageIvm };
    return;
  }
  return dlopen.call(this, module, file, ...rest);
};
const exported = {};
for (const k of Object.getOwnPropertyNames(ivm)) exported[k] = ivm[k];
const now = () => Number(process.hrtime.bigint()) / 1000; // µs
let run = {};
const rows = [];
// The host's garbage collections on the same clock (µs), handed out with the next row written.
const gcs = [];
const perfOffsetUs = now() - performance.now() * 1000;
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    gcs.push([perfOffsetUs + e.startTime * 1000, perfOffsetUs + (e.startTime + e.duration) * 1000]);
}).observe({ entryTypes: ['gc'] });
const calls = {};
const count = (name) => {
  calls[name] = (calls[name] ?? 0) + 1;
};
// Every method of isolated-vm's objects a host reaches, counted (a sync one takes the isolate's lock;
// the prototypes are frozen, so each object made gets own wrappers: the Isolate constructor's
// export is replaced, and what its methods return is wrapped in turn).
const CLASSES = ['Isolate', 'Context', 'Reference', 'Script', 'ExternalCopy', 'Callback'];
const orig = Object.fromEntries(CLASSES.map((c) => [c, ivm[c]]));
function classOf(o) {
  if (o === null || typeof o !== 'object') return undefined;
  for (const c of CLASSES) if (orig[c] && o instanceof orig[c]) return c;
  return undefined;
}
// The objects are native and not extensible: each is handed out as a Proxy that counts its method
// calls and getters, and is unwrapped again where it goes back into isolated-vm.
const targets = new WeakMap();
const unwrap = (v) => (v !== null && typeof v === 'object' && targets.has(v) ? targets.get(v) : v);
function instrument(o) {
  const cls = classOf(o);
  if (cls === undefined || targets.has(o)) return o;
  const p = new Proxy(o, {
    get(t, key) {
      const name = `${cls}.${String(key)}`;
      let proto = Object.getPrototypeOf(t);
      let d;
      for (; proto; proto = Object.getPrototypeOf(proto)) {
        d = Object.getOwnPropertyDescriptor(proto, key);
        if (d) break;
      }
      if (d && typeof d.get === 'function') {
        count(name);
        return instrument(d.get.call(t));
      }
      const v = Reflect.get(t, key, t);
      if (typeof v !== 'function' || key === 'constructor') return v;
      return (...args) => {
        count(name);
        const first =
          name === 'Reference.applySync' &&
          args[2] !== undefined &&
          run.applyAt === undefined &&
          run.inAt !== undefined;
        const cur = run;
        if (first) cur.applyAt = now();
        try {
          return instrument(v.apply(t, args.map(unwrap)));
        } finally {
          if (first) cur.applyBack = now();
          // The next isolate's making (from its `new Isolate` to its last call): its end.
          if (cur.inAt === undefined && cur.makeFrom !== undefined) cur.makeTo = now();
        }
      };
    },
  });
  targets.set(p, o);
  return p;
}
const Isolate = orig.Isolate;
function CountedIsolate(...args) {
  count('new Isolate');
  if (run.inAt === undefined) run.makeFrom = now();
  return instrument(new Isolate(...args));
}
CountedIsolate.prototype = Isolate.prototype;
exported.Isolate = CountedIsolate;
const Callback = orig.Callback;
function CountedCallback(fn, ...rest) {
  count('new Callback');
  // The first host callback a run's program reaches (a trivial run's only one: `done`).
  const stamped = (...a) => {
    if (run.inAt !== undefined && run.callbackAt === undefined) run.callbackAt = now();
    return fn(...a);
  };
  return new Callback(stamped, ...rest);
}
CountedCallback.prototype = Callback.prototype;
exported.Callback = CountedCallback;
// The host's `import ivm from 'isolated-vm'` gets the counted one (an ESM import of a CJS module does
// not read a replaced require.cache entry).
globalThis.__stageIvm = exported;
registerHooks({
  resolve(specifier, context, next) {
    if (specifier === 'isolated-vm') return { url: 'stage:ivm', shortCircuit: true };
    return next(specifier, context);
  },
  load(url, context, next) {
    if (url === 'stage:ivm')
      return { format: 'module', source: 'export default globalThis.__stageIvm;', shortCircuit: true };
    return next(url, context);
  },
});
const writeSync = fs.writeSync;
fs.writeSync = function (fd, buf, ...rest) {
  if (fd === 1 && run.inAt !== undefined && run.doneAt === undefined && buf.length > 5) {
    // the done frame: the only frame a trivial run writes
    run.doneAt = now();
    const r = writeSync.call(this, fd, buf, ...rest);
    run.doneWritten = now();
    const row = run;
    row.calls = { ...calls };
    row.gcs = gcs.splice(0);
    rows.push(row);
    for (const k of Object.keys(calls)) delete calls[k];
    run = {};
    if (rows.length >= 50 && OUT) {
      const out = rows
        .splice(0)
        .map((r) => JSON.stringify(r))
        .join('\n');
      setTimeout(() => appendFileSync(OUT, `${out}\n`), 3);
    }
    return r;
  }
  return writeSync.call(this, fd, buf, ...rest);
};
// The engine's `prepare` frame (round 50: the make held for it), 5 header bytes and its JSON.
const PREPARE_BYTES = 5 + Buffer.byteLength(JSON.stringify({ t: 'prepare' }));
const arrived = (bytes) => {
  if (bytes === PREPARE_BYTES) {
    run.prepareAt ??= now();
    return;
  }
  if (run.inAt === undefined) {
    // calls made since the last done: the next isolate's making (ahead)
    run.ahead = { ...calls };
    for (const k of Object.keys(calls)) delete calls[k];
    run.inAt = now();
    run.inBytes = bytes;
  }
};
// A host that reads fd 0 through a socket of its own with `onread` (round 40, host-input.ts): its
// reads stamped in that callback. Touching `process.stdin` there would make a second reader of the
// pipe, so stdin is hooked only when the host itself asks for it (an older host's stream).
const NetSocket = net.Socket;
net.Socket = class extends NetSocket {
  constructor(options) {
    const onread = options?.fd === 0 ? options.onread : undefined;
    super(
      onread
        ? {
            ...options,
            onread: {
              ...onread,
              callback: (n, buf) => {
                arrived(n);
                return onread.callback(n, buf);
              },
            },
          }
        : options,
    );
  }
};
const stdinGetter = Object.getOwnPropertyDescriptor(process, 'stdin');
let stdinHooked = false;
Object.defineProperty(process, 'stdin', {
  configurable: true,
  enumerable: stdinGetter?.enumerable ?? true,
  get() {
    const stdin = stdinGetter.get.call(process);
    if (!stdinHooked) {
      stdinHooked = true;
      stdin.prependListener('data', (chunk) => arrived(chunk.length));
    }
    return stdin;
  },
});
