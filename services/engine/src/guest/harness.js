// One file on purpose: host.ts reads it as text and compiles it as one script per isolate (harness-install.ts), whose completion value is `install`; an isolate has no module loader to join parts.
// The guest harness: evaluated first in every fresh isolate context, before the program. Its
// completion value is `install`, which the host applies once to its callbacks (host `harness-install.ts`:
// one call into the isolate, not a global set and deleted for each); `install` builds the program's
// environment (apps, flat tools, console, fixed clock, seeded Math.random), removes what a program
// must not have, and returns the host's one entry point, `enter`: a run's start,
// enter('start', code, configJson, _, _, onHostThread), or a call's outcome,
// enter(kind, id, a, b, c, onHostThread). Neither `install` nor `enter` is ever on the global object.
// Everything crossing to the host is a string made here; the host re-checks every string, so a
// program that tampers with this harness can only lie about its own values.
(function install(hostLog, hostLogWait, hostCall, hostCallWait, hostDone, hostFail) {
  const g = globalThis;

  // Intrinsics captured before the program can change them.
  const JSONstringify = JSON.stringify;
  const JSONparse = JSON.parse;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const ArrayIsArray = Array.isArray;
  const ReflectOwnKeys = Reflect.ownKeys;
  const ReflectApply = Reflect.apply;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectFreeze = Object.freeze;
  const ObjectCreate = Object.create;
  const ObjectHasOwn = Object.hasOwn;
  const NumberIsFinite = Number.isFinite;
  const StringCtor = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const PromiseReject = Promise.reject.bind(Promise);
  const PromiseThen = Promise.prototype.then;
  const SetCtor = Set;
  const MapCtor = Map;
  const WeakSetCtor = WeakSet;
  const MathImul = Math.imul;
  const AsyncFunction = (async () => {}).constructor;
  const ArrayJoin = Array.prototype.join;
  const ArrayPush = Array.prototype.push;
  const ArrayPop = Array.prototype.pop;
  const ArrayIncludes = Array.prototype.includes;
  const SetHas = Set.prototype.has;
  const MapGet = Map.prototype.get;
  const MapSet = Map.prototype.set;
  const MapDelete = Map.prototype.delete;
  const WeakSetAdd = WeakSet.prototype.add;
  const WeakSetHas = WeakSet.prototype.has;
  const StringCharCodeAt = String.prototype.charCodeAt;
  const StringSplit = String.prototype.split;
  const RegExpExec = RegExp.prototype.exec;
  const DatePrototype = Date.prototype;
  const MapPrototype = Map.prototype;
  const SetPrototype = Set.prototype;
  const ErrorPrototype = Error.prototype;
  const PromisePrototype = Promise.prototype;
  const ProxyCtor = Proxy;

  // ---- Lossless JSON encoding ------------------------------------------------------------------
  // Only plain data crosses: strings, finite numbers (-0 becomes 0), booleans, null, arrays without
  // holes or undefined, and objects whose prototype is Object.prototype or null, with enumerable data
  // properties (undefined-valued properties are omitted, as JSON does; symbol keys are not data and
  // are ignored). Anything else fails with the context's standard line.
  const failures = new WeakSetCtor();
  function encodeFailure(message, detail) {
    const f = { message, detail };
    ReflectApply(WeakSetAdd, failures, [f]);
    return f;
  }
  function isEncodeFailure(e) {
    return typeof e === 'object' && e !== null && ReflectApply(WeakSetHas, failures, [e]);
  }
  // What a value that cannot be carried is, and how to return it instead: the agent reads this.
  function kindOf(v) {
    let proto;
    try {
      proto = ObjectGetPrototypeOf(v);
    } catch {
      return 'not a plain object';
    }
    if (proto === DatePrototype) return 'a Date: return date.toISOString()';
    if (proto === MapPrototype) return 'a Map: return Object.fromEntries(map)';
    if (proto === SetPrototype) return 'a Set: return [...set]';
    if (proto === PromisePrototype) return 'a Promise: await it';
    if (proto === ErrorPrototype || (typeof v === 'object' && v instanceof ErrorCtor))
      return 'an Error: return { name: e.name, message: e.message }';
    let name;
    try {
      const d = proto === null ? undefined : ObjectGetOwnPropertyDescriptor(proto, 'constructor');
      name = d && typeof d.value === 'function' ? d.value.name : undefined;
    } catch {}
    if (name === 'ArrayBuffer' || (typeof name === 'string' && /Array$/.test(name)))
      return `a ${name}: return Array.from(bytes)`;
    return typeof name === 'string' && name !== ''
      ? `a ${name} instance: return a plain object ({ ...value })`
      : 'not a plain object';
  }
  const TYPE_HINTS = {
    function: 'a function: call it and return what it returns',
    bigint: 'a bigint: return String(n), or Number(n) when it is small',
    symbol: 'a symbol: return a string',
    undefined: 'undefined: use null',
  };
  function encode(value, context, root) {
    const stack = [];
    function walk(v, path) {
      switch (typeof v) {
        case 'string':
          return JSONstringify(v);
        case 'number':
          if (!NumberIsFinite(v))
            throw encodeFailure(
              context,
              `${path} is ${StringCtor(v)}: JSON has no ${StringCtor(v)}, use null or a string`,
            );
          return v === 0 ? '0' : StringCtor(v);
        case 'boolean':
          return v ? 'true' : 'false';
        case 'object':
          break;
        default:
          throw encodeFailure(context, `${path} is ${TYPE_HINTS[typeof v] ?? `a ${typeof v}`}`);
      }
      if (v === null) return 'null';
      if (ReflectApply(ArrayIncludes, stack, [v])) throw encodeFailure(context, `${path} is a cycle`);
      ReflectApply(ArrayPush, stack, [v]);
      const parts = [];
      let out;
      if (ArrayIsArray(v)) {
        if (ObjectGetPrototypeOf(v) !== ArrayPrototype)
          throw encodeFailure(context, `${path} is not a plain array`);
        const length = v.length;
        for (let i = 0; i < length; i++) {
          const d = ObjectGetOwnPropertyDescriptor(v, i);
          if (d === undefined)
            throw encodeFailure('cannot encode a sparse JSON array', `${path}[${i}] is a hole`);
          if (!ObjectHasOwn(d, 'value')) throw encodeFailure(context, `${path}[${i}] is an accessor`);
          if (d.value === undefined) throw encodeFailure(context, `${path}[${i}] is undefined: use null`);
          ReflectApply(ArrayPush, parts, [walk(d.value, `${path}[${i}]`)]);
        }
        out = `[${ReflectApply(ArrayJoin, parts, [','])}]`;
      } else {
        const proto = ObjectGetPrototypeOf(v);
        if (proto !== ObjectPrototype && proto !== null)
          throw encodeFailure(context, `${path} is ${kindOf(v)}`);
        const keys = ReflectOwnKeys(v);
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i];
          if (typeof k !== 'string') continue;
          const d = ObjectGetOwnPropertyDescriptor(v, k);
          if (d === undefined || !d.enumerable) continue;
          if (!ObjectHasOwn(d, 'value')) throw encodeFailure(context, `${path}.${k} is an accessor`);
          if (d.value === undefined) continue;
          ReflectApply(ArrayPush, parts, [`${JSONstringify(k)}:${walk(d.value, `${path}.${k}`)}`]);
        }
        out = `{${ReflectApply(ArrayJoin, parts, [','])}}`;
      }
      ReflectApply(ArrayPop, stack, []);
      return out;
    }
    try {
      return walk(value, root);
    } catch (e) {
      if (isEncodeFailure(e)) throw e;
      // A trap that threw, a stack overflow on deep nesting: the value cannot make the trip.
      throw encodeFailure(context, 'reading the value threw');
    }
  }

  // ---- Console ---------------------------------------------------------------------------------
  function show(v) {
    try {
      if (typeof v === 'string') return v;
      if (v === undefined) return 'undefined';
      if (typeof v === 'function') return '[Function]';
      if (typeof v === 'symbol' || typeof v === 'bigint') return StringCtor(v);
      if (typeof v === 'object' && v !== null && v instanceof ErrorCtor) {
        return typeof v.stack === 'string' ? v.stack : `${v.name}: ${v.message}`;
      }
      const text = JSONstringify(v);
      return text === undefined ? StringCtor(v) : text;
    } catch {
      try {
        return StringCtor(v);
      } catch {
        return '[unprintable]';
      }
    }
  }
  // ---- Hand-over to the host ------------------------------------------------------------------
  // Log lines and binding calls go to the host without the isolate's thread waiting for it (the
  // host takes them in order, before the end of the turn that made them): a thread hop saved each.
  // Every QUEUE_ITEMS-th, and any that would queue more than QUEUE_CHARS characters, waits until
  // the host has taken it and all before it, so what a program can queue outside its heap is bounded.
  // The program's first turn runs on the host's own thread, where a handed-over item would wait
  // until that turn returned and arrive after later waited ones: there every item is waited (a
  // plain call on the same thread, no hop). So does a delivery the host runs on its own thread;
  // one on isolated-vm's thread queues again.
  const QUEUE_ITEMS = 64;
  const QUEUE_CHARS = 1048576;
  let queuedItems = 0;
  let queuedChars = 0;
  let waitEach = false;
  function handOver(queued, waited, chars, a, b, c) {
    if (waitEach || queuedItems + 1 >= QUEUE_ITEMS || queuedChars + chars > QUEUE_CHARS) {
      waited(a, b, c);
      queuedItems = 0;
      queuedChars = 0;
    } else {
      queuedItems++;
      queuedChars += chars;
      queued(a, b, c);
    }
  }

  function makeLogger(level) {
    return function log(...args) {
      const texts = [];
      for (let i = 0; i < args.length; i++) ReflectApply(ArrayPush, texts, [show(args[i])]);
      const text = ReflectApply(ArrayJoin, texts, [' ']);
      handOver(hostLog, hostLogWait, text.length, level, text);
    };
  }
  const consoleObject = ObjectCreate(null);
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) consoleObject[level] = makeLogger(level);
  ObjectFreeze(consoleObject);

  // ---- Binding calls ---------------------------------------------------------------------------
  const pending = new MapCtor();
  let nextId = 0;
  let allowed = new SetCtor();
  let allowedNames = [];
  function callBinding(name, args) {
    if (!ReflectApply(SetHas, allowed, [name])) {
      return PromiseReject(
        new TypeErrorCtor(`unknown binding: ${StringCtor(name)}; ${whatThereIs('bindings', allowedNames)}`),
      );
    }
    let argsJson;
    try {
      argsJson =
        args === undefined ? 'null' : encode(args, 'binding arguments must be lossless JSON', 'arguments');
    } catch (e) {
      // Not catchable by the program: the host ends the run with this line.
      hostFail(e.message, `${StringCtor(name)}: ${e.detail}`);
      return new PromiseCtor(() => {});
    }
    const id = nextId++;
    return new PromiseCtor((resolve, reject) => {
      ReflectApply(MapSet, pending, [id, { resolve, reject }]);
      handOver(hostCall, hostCallWait, argsJson.length, id, name, argsJson);
    });
  }
  function deliver(id, kind, a, b, c, onHostThread) {
    waitEach = onHostThread === true;
    const p = ReflectApply(MapGet, pending, [id]);
    if (p === undefined) return;
    ReflectApply(MapDelete, pending, [id]);
    if (kind === 'result') {
      p.resolve(JSONparse(a));
      return;
    }
    const err = new ErrorCtor(b);
    ObjectDefineProperty(err, 'name', { value: a, writable: true, configurable: true, enumerable: false });
    err.details = c === undefined ? {} : JSONparse(c);
    p.reject(err);
  }

  // ---- What exists, for a program that named something that does not -------------------------
  // `apps.nope.x()` would read "Cannot read properties of undefined": the names that do exist say
  // more. Bounded, so a run with thousands of bindings does not put them all in one message.
  const LISTED = 40;
  function whatThereIs(what, names) {
    if (names.length === 0) return `this run has no ${what}`;
    const shown =
      names.length > LISTED ? [...names.slice(0, LISTED), `… ${names.length - LISTED} more`] : names;
    return `this run's ${what}: ${ReflectApply(ArrayJoin, shown, [', '])}`;
  }
  // Keys a runtime or a library reads to learn what an object is; answered with undefined, not an error.
  const PROBED = new SetCtor([
    'then',
    'toJSON',
    'constructor',
    'valueOf',
    'toString',
    'inspect',
    'nodeType',
    '$$typeof',
    'asymmetricMatch',
  ]);
  function strictNamespace(target, describeMissing) {
    return new ProxyCtor(target, {
      get(t, key) {
        if (typeof key !== 'string' || ObjectHasOwn(t, key) || ReflectApply(SetHas, PROBED, [key]))
          return t[key];
        throw new TypeErrorCtor(describeMissing(key));
      },
    });
  }

  // ---- Environment -----------------------------------------------------------------------------
  // Math.random, installed ahead: sfc32 over a state a run seeds (`seedRandom`, in `start`).
  let ra = 0;
  let rb = 0;
  let rc = 0;
  let rd = 0;
  function seedRandom(seed) {
    // cyrb128 to spread the seed string over 128 bits, then sfc32.
    let h1 = 1779033703;
    let h2 = 3144134277;
    let h3 = 1013904242;
    let h4 = 2773480762;
    for (let i = 0; i < seed.length; i++) {
      const k = ReflectApply(StringCharCodeAt, seed, [i]);
      h1 = h2 ^ MathImul(h1 ^ k, 597399067);
      h2 = h3 ^ MathImul(h2 ^ k, 2869860233);
      h3 = h4 ^ MathImul(h3 ^ k, 951274213);
      h4 = h1 ^ MathImul(h4 ^ k, 2716044179);
    }
    h1 = MathImul(h3 ^ (h1 >>> 18), 597399067);
    h2 = MathImul(h4 ^ (h2 >>> 22), 2869860233);
    h3 = MathImul(h1 ^ (h3 >>> 17), 951274213);
    h4 = MathImul(h2 ^ (h4 >>> 19), 2716044179);
    ra = (h1 ^ h2 ^ h3 ^ h4) >>> 0;
    rb = (h2 ^ h1) >>> 0;
    rc = (h3 ^ h1) >>> 0;
    rd = (h4 ^ h1) >>> 0;
  }
  function random() {
    ra >>>= 0;
    rb >>>= 0;
    rc >>>= 0;
    rd >>>= 0;
    let t = (ra + rb) | 0;
    ra = rb ^ (rb >>> 9);
    rb = (rc + (rc << 3)) | 0;
    rc = (rc << 21) | (rc >>> 11);
    rd = (rd + 1) | 0;
    t = (t + rd) | 0;
    rc = (rc + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  // The fixed clock, installed ahead (with the rest of what does not depend on the run, below): a
  // run sets only its time (`start`). Until then (the harness alone runs) it reads 0.
  let clockMs = 0;
  function fixClock() {
    const RealDate = g.Date;
    // A plain function (not a subclass) so the real constructor is not its prototype.
    // biome-ignore lint/suspicious/noShadowRestrictedNames: the replacement must be named Date
    function Date(...args) {
      if (new.target === undefined) return new RealDate(clockMs).toString();
      return args.length === 0 ? new RealDate(clockMs) : new RealDate(...args);
    }
    ObjectDefineProperty(Date, 'prototype', { value: RealDate.prototype, writable: false });
    Date.now = function now() {
      return clockMs;
    };
    Date.parse = RealDate.parse;
    Date.UTC = RealDate.UTC;
    ObjectDefineProperty(RealDate.prototype, 'constructor', {
      value: Date,
      writable: true,
      configurable: true,
      enumerable: false,
    });
    RealDate.now = Date.now;
    g.Date = Date;
    // Intl formats "now" when given no date.
    const dtf = Intl.DateTimeFormat.prototype;
    const formatGetter = ObjectGetOwnPropertyDescriptor(dtf, 'format').get;
    const formatToParts = dtf.formatToParts;
    ObjectDefineProperty(dtf, 'format', {
      configurable: true,
      get() {
        const f = ReflectApply(formatGetter, this, []);
        return (date) => f(date === undefined ? clockMs : date);
      },
    });
    dtf.formatToParts = function formatToPartsFixed(date) {
      return ReflectApply(formatToParts, this, [date === undefined ? clockMs : date]);
    };
  }

  function renderThrown(e) {
    try {
      if (typeof e === 'string') return e;
      if (typeof e === 'object' && e !== null && (e instanceof ErrorCtor || 'message' in e)) {
        const name = e.name;
        const message = e.message;
        const n = typeof name === 'string' && name !== '' ? name : 'Error';
        if (typeof message !== 'string') return n;
        return message === '' ? n : `${n}: ${message}`;
      }
      return encode(e, 'program threw an unrenderable value', 'thrown');
    } catch {
      return undefined;
    }
  }

  // Where in the program an error happened. The program is the body of `new AsyncFunction(code)`,
  // whose frames read `<anonymous>:<line>:<column>` two lines below the program's own numbering;
  // harness frames are dropped, so the stack an agent reads is the program's.
  const PROGRAM_LINE_OFFSET = 2;
  // Made on the first throw it reads, not in `install`: a regex literal there was ~0.6 % of a
  // host's CPU a run (README, round 38 `host-cpu`) for the few runs whose program throws.
  let FRAME;
  function locate(e, head) {
    try {
      FRAME ??= /^\s*at (.*?) ?\((?:eval at .*, )?<anonymous>:(\d+):(\d+)\)$/;
      if (typeof e !== 'object' || e === null) return undefined;
      // V8 keeps `stack` as an own accessor of the error (a data property when a program set it).
      const d = ObjectGetOwnPropertyDescriptor(e, 'stack');
      const stack =
        d === undefined ? undefined : typeof d.get === 'function' ? ReflectApply(d.get, e, []) : d.value;
      if (typeof stack !== 'string') return undefined;
      const lines = ReflectApply(StringSplit, stack, ['\n']);
      const frames = [];
      let where;
      for (let i = 1; i < lines.length && frames.length < 20; i++) {
        const m = ReflectApply(RegExpExec, FRAME, [lines[i]]);
        if (m === null) continue;
        const line = +m[2] - PROGRAM_LINE_OFFSET;
        const column = +m[3];
        if (line < 1) continue;
        if (where === undefined) where = { line, column };
        const fn = m[1] === 'eval' || m[1] === 'async eval' || m[1] === '' ? '' : `${m[1]} `;
        ReflectApply(ArrayPush, frames, [
          fn === '' ? `    at program:${line}:${column}` : `    at ${fn}(program:${line}:${column})`,
        ]);
      }
      if (where === undefined) return undefined;
      return JSONstringify({
        line: where.line,
        column: where.column,
        stack: `${head}\n${ReflectApply(ArrayJoin, frames, ['\n'])}`,
      });
    } catch {
      return undefined;
    }
  }

  // What every run's environment has, whatever the run, set up here: in the isolate made ahead
  // (host.ts `prepare`, before its run arrives; each run still has an isolate of its own), not on
  // the run's path. No program has run yet: nothing here can have been changed.
  fixClock();
  Math.random = random;
  // Nothing of the host, no shared memory, no WebAssembly, no growable buffers.
  delete g.SharedArrayBuffer;
  delete g.Atomics;
  delete g.WebAssembly;
  delete ArrayBuffer.prototype.resize;
  delete ArrayBuffer.prototype.transfer;
  delete ArrayBuffer.prototype.transferToFixedLength;
  ObjectDefineProperty(g, 'console', {
    value: consoleObject,
    writable: true,
    configurable: true,
    enumerable: false,
  });

  function start(code, configJson, onHostThread) {
    waitEach = onHostThread === true;
    const config = JSONparse(configJson);
    allowed = new SetCtor(config.bindings);
    allowedNames = config.bindings;
    clockMs = config.clockMs;
    seedRandom(config.seed);

    const apps = ObjectCreate(null);
    const connections = ObjectCreate(null);
    for (const name of config.bindings) {
      const dot = name.indexOf('.');
      if (dot === -1) {
        ObjectDefineProperty(g, name, {
          value: (args) => callBinding(name, args),
          writable: false,
          configurable: false,
          enumerable: false,
        });
        continue;
      }
      const conn = name.slice(0, dot);
      const cap = name.slice(dot + 1);
      if (connections[conn] === undefined) connections[conn] = ObjectCreate(null);
      connections[conn][cap] = (args) => callBinding(name, args);
    }
    const appNames = ReflectOwnKeys(connections);
    for (const conn of appNames) {
      const caps = ReflectOwnKeys(connections[conn]);
      apps[conn] = strictNamespace(
        ObjectFreeze(connections[conn]),
        (key) => `apps.${conn}.${key} is not a tool of ${conn}; ${whatThereIs(`tools of ${conn}`, caps)}`,
      );
    }
    apps.call = (name, args) => callBinding(name, args);
    ObjectFreeze(apps);
    const appsView = strictNamespace(
      apps,
      (key) => `apps.${key} is not an App of this run; ${whatThereIs('Apps', appNames)}`,
    );
    ObjectDefineProperty(g, 'apps', {
      value: appsView,
      writable: false,
      configurable: false,
      enumerable: false,
    });
    let fn;
    try {
      fn = new AsyncFunction(code);
    } catch (e) {
      const text = renderThrown(e);
      hostDone('throw', text === undefined ? '' : text, text === undefined);
      return;
    }
    ReflectApply(PromiseThen, ReflectApply(fn, undefined, []), [
      (value) => {
        if (value === undefined) {
          hostDone('value', undefined, false);
          return;
        }
        let json;
        try {
          json = encode(value, 'program completion must be lossless JSON', 'result');
        } catch (e) {
          hostDone('invalid', e.message, e.detail);
          return;
        }
        hostDone('value', json, false);
      },
      (e) => {
        const text = renderThrown(e);
        if (text === undefined) return hostDone('throw', '', true);
        hostDone('throw', text, locate(e, text) ?? false);
      },
    ]);
  }

  return function enter(kind, a, b, c, d, onHostThread) {
    if (kind === 'start') start(a, b, onHostThread);
    else deliver(a, kind, b, c, d, onHostThread);
  };
});
