/**
 * Hostile programs (issue 2, item 6). Each must end with the contract's outcome, never reach a host
 * object, and leave the engine able to serve the next run.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from './index.ts';
import type { BindingCall, BindingOutcome, ExecuteOptions, RunOutcome } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());
afterEach(async () => {
  // The host process and the next run are unharmed.
  const next = await engine.execute('return "alive"', { limits: { timeoutMs: 10_000 } });
  expect(next.valueJson).toBe('"alive"');
});

const echo = async (call: BindingCall): Promise<BindingOutcome> => ({
  type: 'result',
  valueJson: call.argsJson,
});

function run(code: string, options: ExecuteOptions = {}): Promise<RunOutcome> {
  return engine.execute(code, { bindings: ['t', 'mail.send'], onCall: echo, ...options });
}

function value(out: RunOutcome): unknown {
  expect(out.failure).toBeUndefined();
  expect(out.status).toBe('completed');
  return JSON.parse(out.valueJson!);
}

const HOST_REACH = `
  const probe = (f) => { try { return String(f()) } catch (e) { return "threw " + (e && e.name) } };
  const viaCtor = (x) => probe(() => x.constructor.constructor("return typeof process + typeof require + typeof globalThis.fetch")());
`;

describe('constructor-chain escapes', () => {
  it('through binding functions, their results, their errors, console and apps', async () => {
    const out = await run(
      `${HOST_REACH}
       const r = await t({ a: 1 });
       let err; try { await mail.fail() } catch (e) { err = e }
       try { await apps.call("mail.send", 1) } catch (e) { err = e }
       return [viaCtor(t), viaCtor(apps.mail.send), viaCtor(apps.call), viaCtor(apps), viaCtor(r), viaCtor(err ?? {}),
               viaCtor(console.log), viaCtor(console), viaCtor(this ?? {}), viaCtor(Math.random), viaCtor(Date),
               viaCtor(Date.now), probe(() => Object.getPrototypeOf(Date)), viaCtor(new Date())];`,
      { bindings: ['t', 'mail.send'] },
    );
    const results = value(out) as string[];
    // Either the chain ends in the isolate's own Function (nothing of the host is there), or there is
    // no chain at all (null-prototype objects such as apps and console).
    for (const r of results.slice(0, 12))
      expect(r).toMatch(/^(undefinedundefinedundefined|threw TypeError)$/);
    expect(results.filter((r) => r === 'undefinedundefinedundefined').length).toBeGreaterThanOrEqual(9);
    expect(results[12]).toMatch(/function/);
    expect(results[13]).toBe('undefinedundefinedundefined');
  });

  it('through errors thrown by the environment and App errors', async () => {
    const out = await run(
      `${HOST_REACH}
       const found = [];
       try { await apps.mail.send({}) } catch (e) {
         found.push(viaCtor(e), viaCtor(e.details), probe(() => e.__proto__.constructor.constructor("return typeof process")()));
       }
       try { null.x } catch (e) { found.push(viaCtor(e)) }
       try { await apps.call("nope.x") } catch (e) { found.push(viaCtor(e)) }
       return found;`,
      {
        onCall: async () => ({
          type: 'error',
          name: 'AppCallFailed',
          message: 'no',
          details: { reason: 'x' },
        }),
      },
    );
    expect(value(out)).toEqual([
      'undefinedundefinedundefined',
      'undefinedundefinedundefined',
      'undefined',
      'undefinedundefinedundefined',
      'undefinedundefinedundefined',
    ]);
  });

  it('a returned object whose constructor chain is hostile is refused, not followed', async () => {
    const out = await run('const o = {}; Object.setPrototypeOf(o, Function.prototype); return o;');
    expect(out.failure?.kind).toBe('invalid-output');
  });
});

describe('Error.prepareStackTrace and CallSite tricks', () => {
  it('reveal neither host frames, host paths nor host functions', async () => {
    const out = await run(
      `const seen = [];
       Error.prepareStackTrace = (err, frames) => {
         for (const f of frames) {
           let fnCtor = "none";
           try { const fn = f.getFunction(); if (fn) fnCtor = fn.constructor("return typeof process")() } catch (e) { fnCtor = "threw" }
           let thisCtor = "none";
           try { const th = f.getThis(); if (th) thisCtor = th.constructor.constructor("return typeof process")() } catch (e) { thisCtor = "threw" }
           seen.push([String(f.getFileName()), String(f.getFunctionName()), fnCtor, thisCtor]);
         }
         return "custom";
       };
       Error.stackTraceLimit = Infinity;
       try { await t() } catch (e) { e.stack }
       console.log = new Proxy(console.log, {});
       try { await apps.mail.send(() => 1) } catch (e) { e.stack }
       return seen;`,
      {
        bindings: ['t'],
        onCall: async () => ({ type: 'error', name: 'AppCallDenied', message: 'no' }),
      },
    );
    // The second call fails the run (a function is not JSON); the first error's frames were collected
    // before. Whatever the outcome, no frame names a host file and no function reaches `process`.
    const text = JSON.stringify(out);
    expect(text).not.toMatch(/\/work\/|node_modules|node:internal|host\.ts|\.ts:\d/);
    expect(text).not.toMatch(/"object"|"function"/);
  });

  it('an error stack printed by the program carries no host path', async () => {
    const out = await run(
      'try { await t() } catch (e) { console.log(e.stack) } try { null.f() } catch (e) { console.log(e.stack) }',
      { bindings: ['t'], onCall: async () => ({ type: 'error', name: 'AppCallFailed', message: 'x' }) },
    );
    expect(out.status).toBe('completed');
    expect(out.logs.length).toBe(2);
    for (const line of out.logs) expect(line.text).not.toMatch(/\/work\/|node_modules|node:|\.ts/);
  });
});

describe('caller chains', () => {
  it('function.caller and arguments.callee.caller never expose the harness', async () => {
    const out = await run(
      `const attempt = (f) => { try { const c = f(); return c === null || c === undefined ? "none" : String(c).slice(0, 30) } catch (e) { return "threw" } };
       function probe() { return probe.caller }
       const results = [
         attempt(() => probe()),
         attempt(function () { return arguments.callee.caller }),
         attempt(() => JSON.parse(JSON.stringify({ toJSON() { return String(arguments.callee.caller) } }))),
       ];
       results.push(await t(1).then(function after() { return attempt(() => after.caller) }));
       console.log({ toJSON() { results.push(attempt(() => arguments.callee.caller)); return 1 } });
       return results;`,
    );
    // The program's own functions, or nothing (strict harness callers are censored or refused).
    expect(value(out)).toEqual(['() => probe()', '(f) => { try { const c = f(); ', 'threw', 'none', 'threw']);
  });

  it('Object.prototype.value cannot turn an accessor into data', async () => {
    const out = await run('Object.prototype.value = 1; return { get a() { return 2 } }');
    expect(out.failure).toMatchObject({
      kind: 'invalid-output',
      message: 'program completion must be lossless JSON',
    });
  });
});

describe('Proxy, Symbol.species and getter traps on values that cross', () => {
  it('getters in binding arguments are never invoked; the run fails with the contract line', async () => {
    const out = await run('await t({ get a() { console.log("getter ran"); return 1 } })');
    expect(out.failure).toMatchObject({
      kind: 'exception',
      message: 'binding arguments must be lossless JSON',
    });
    expect(out.logs).toEqual([]);
  });

  it('an Array subclass with a hostile Symbol.species is not plain data', async () => {
    const out = await run(
      `class Evil extends Array { static get [Symbol.species]() { throw new Error("species") } }
       const e = new Evil(); e.push(1); return e;`,
    );
    expect(out.failure).toMatchObject({
      kind: 'invalid-output',
      message: 'program completion must be lossless JSON',
    });
  });

  it('a Proxy whose traps lie is read inside the isolate and the host gets only checked JSON text', async () => {
    const seen: string[] = [];
    const out = await run(
      `const p = new Proxy({}, {
         ownKeys: () => ["a", "b"],
         getOwnPropertyDescriptor: (_, k) => ({ value: k === "a" ? 1 : "x", enumerable: true, configurable: true }),
         getPrototypeOf: () => Object.prototype,
       });
       await t(p);
       return p;`,
      {
        onCall: async (c) => {
          seen.push(c.argsJson);
          return echo(c);
        },
      },
    );
    expect(seen).toEqual(['{"a":1,"b":"x"}']);
    expect(value(out)).toEqual({ a: 1, b: 'x' });
  });

  it("the program's own changes to JSON, Promise, Array and Object.prototype do not change what crosses", async () => {
    const seen: string[] = [];
    const out = await run(
      `JSON.stringify = () => '{"forged":true}';
       JSON.parse = () => ({ forged: true });
       Object.prototype.toJSON = () => "hacked";
       Array.prototype.join = () => "hacked";
       Array.prototype.push = () => 0;
       Promise.prototype.then = function () { throw new Error("then hijacked") };
       const r = t({ list: [1, 2], nested: { k: "v" } });
       return { list: [1, 2], nested: { k: "v" } };`,
      {
        onCall: async (c) => {
          seen.push(c.argsJson);
          return echo(c);
        },
      },
    );
    expect(seen).toEqual(['{"list":[1,2],"nested":{"k":"v"}}']);
    expect(value(out)).toEqual({ list: [1, 2], nested: { k: 'v' } });
  });

  it('a thenable returned by the program resolves like any async return', async () => {
    expect(value(await run('return { then(resolve) { resolve(5) } }'))).toBe(5);
  });
});

describe('hostile values given to console', () => {
  it('revoked proxies, throwing toString and getters, symbols and cycles are printed or replaced, never crash', async () => {
    const out = await run(
      `const { proxy, revoke } = Proxy.revocable({}, {}); revoke();
       const cyc = {}; cyc.self = cyc;
       console.log(proxy);
       console.log({ toString() { throw new Error("no") }, toJSON() { throw new Error("no") } });
       console.log(Symbol("s"), 10n, cyc);
       console.error({ get boom() { throw new Error("getter") } });
       return "printed";`,
    );
    expect(value(out)).toBe('printed');
    expect(out.logs.map((l) => l.text)).toEqual([
      '[unprintable]',
      '[unprintable]',
      'Symbol(s) 10 [object Object]',
      '[object Object]',
    ]);
  });
});

describe('prototype pollution through JSON', () => {
  it('__proto__ keys travel as data in both directions and pollute neither side', async () => {
    const seen: string[] = [];
    const out = await run(
      `const polluted = JSON.parse('{"__proto__": {"isAdmin": true}}');
       const back = await t(polluted);
       return [({}).isAdmin === undefined, Object.keys(back), back.isAdmin === undefined];`,
      {
        onCall: async (c) => {
          seen.push(c.argsJson);
          return echo(c);
        },
      },
    );
    expect(seen).toEqual(['{"__proto__":{"isAdmin":true}}']);
    expect(value(out)).toEqual([true, ['__proto__'], true]);
    const parsed = JSON.parse(seen[0]!) as Record<string, unknown>;
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(Object.keys(parsed)).toEqual(['__proto__']);
  });
});

describe('CPU: loops, microtask floods, never-settling promises, catastrophic regex', () => {
  it.each([
    ['an infinite sync loop', 'for (;;) {}'],
    ['an infinite loop inside a catch-all', 'for (;;) { try { for (;;) {} } catch {} }'],
    ['a microtask flood', 'const f = () => Promise.resolve().then(f); f(); await new Promise(() => {})'],
    ['a promise that never settles', 'await new Promise(() => {})'],
    ['a catastrophic regex', 'return /(a+)+$/.test("a".repeat(40) + "b")'],
    ['a loop after a binding call', 'await t(1); for (;;) {}'],
  ])('%s ends as timeout', async (_, code) => {
    const out = await run(`console.log("start"); ${code}`, { limits: { timeoutMs: 300 } });
    expect(out.failure).toEqual({ kind: 'timeout', message: 'execution deadline reached (300ms)' });
    expect(out.logs).toEqual([{ level: 'log', text: 'start' }]);
  });

  it('deep recursion is a catchable RangeError, and uncaught an exception', async () => {
    expect(value(await run('function f() { return f() } try { f() } catch (e) { return e.name }'))).toBe(
      'RangeError',
    );
    const out = await run('function f() { return f() } f()');
    expect(out.failure).toMatchObject({
      kind: 'exception',
      message: 'RangeError: Maximum call stack size exceeded',
    });
  });

  it('a deeply nested return value is refused, not a host stack overflow', async () => {
    const out = await run('let o = {}; for (let i = 0; i < 1e5; i++) o = { o }; return o');
    expect(out.failure).toMatchObject({
      kind: 'invalid-output',
      message: 'program completion must be lossless JSON',
    });
  });
});

describe('memory bombs', () => {
  const small = { memoryMb: 64, timeoutMs: 20_000 };

  it('an array bomb ends as worker-exit with cause memory', async () => {
    const out = await run('const a = []; for (let i = 0; ; i++) a.push({ i, s: "v" + i });', {
      limits: small,
    });
    expect(out.failure).toMatchObject({ kind: 'worker-exit', cause: 'memory' });
  });

  it('huge and accumulating ArrayBuffers are refused by the allocator', async () => {
    const big = await run('return new ArrayBuffer(2 ** 32).byteLength', { limits: small });
    expect(big.failure).toMatchObject({
      kind: 'exception',
      message: 'RangeError: Array buffer allocation failed',
    });
    const many = await run('const a = []; for (;;) a.push(new Uint8Array(1e7).fill(1))', { limits: small });
    expect(many.failure?.kind).toMatch(/^(exception|worker-exit)$/);
    if (many.failure?.kind === 'worker-exit') expect(many.failure.cause).toBe('memory');
    else expect(many.failure?.message).toBe('RangeError: Array buffer allocation failed');
  });

  it('a resizable ArrayBuffer cannot grow (resize is removed)', async () => {
    const out = await run(
      'const b = new ArrayBuffer(1, { maxByteLength: 2 ** 32 }); b.resize(2 ** 32); return 1',
      {
        limits: small,
      },
    );
    expect(out.failure).toMatchObject({
      kind: 'exception',
      message: 'TypeError: b.resize is not a function',
    });
  });

  it('WebAssembly memory cannot be made: WebAssembly is removed', async () => {
    const out = await run('new WebAssembly.Memory({ initial: 1, maximum: 65536 }).grow(60000)', {
      limits: small,
    });
    expect(out.failure).toMatchObject({
      kind: 'exception',
      message: 'ReferenceError: WebAssembly is not defined',
    });
  });

  it('a V8 fatal error (a 400M-element array) ends that process alone, as worker-exit', async () => {
    const out = await run('console.log("before"); "ab".repeat(2e8).split(""); return 1', {
      limits: { timeoutMs: 20_000 },
    });
    expect(out.failure?.kind).toBe('worker-exit');
    expect(out.failure?.message).toMatch(/^the sandbox host process ended early \(signal SIG[A-Z]+\)$/);
    expect(out.logs).toEqual([{ level: 'log', text: 'before' }]);
  });
});

describe('output bombs', () => {
  it('endless printing stops at the cap with the fitting part kept', { timeout: 300_000 }, async () => {
    // No deadline: only the cap can end this run, however long a loaded machine takes to print it.
    const out = await run('for (;;) console.log("x".repeat(1e6))', { limits: { timeoutMs: null } });
    expect(out.failure).toEqual({
      kind: 'output-limit',
      message: 'output exceeded the cap of 67108864 bytes',
    });
    const bytes = out.logs.reduce((n, l) => n + Buffer.byteLength(l.text), 0);
    expect(bytes).toBe(67_108_864);
  });

  it('a returned value past the cap is output-limit', async () => {
    const out = await run('return "x".repeat(7e7)', { limits: { timeoutMs: 30_000 } });
    expect(out.failure).toEqual({
      kind: 'output-limit',
      message: 'output exceeded the cap of 67108864 bytes',
    });
  });

  it('many tiny lines are counted too', async () => {
    const out = await run('for (;;) console.log("y")', {
      limits: { outputBytes: 10_000, timeoutMs: 10_000 },
    });
    expect(out.failure?.kind).toBe('output-limit');
    expect(out.logs.length).toBe(10_000);
  });
});
