/**
 * What a program's isolate sees, through `execute` on real sandbox hosts: values cross as lossless
 * JSON text, console levels, an empty environment, a fixed clock, a seeded random, a fresh isolate
 * each run. Shared helpers: test/run-helpers.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { echo, runOn } from '../test/run-helpers.ts';
import { createEngine, renderResultText } from './index.ts';

const engine = createEngine();
afterAll(() => engine.close());
const run = runOn(engine);

describe('values cross as lossless JSON text', () => {
  const argsCase = async (expr: string) => {
    let called = false;
    const out = await run(`try { await t(${expr}) } catch (e) { return "caught" } return "no error"`, {
      bindings: ['t'],
      onCall: async (c) => {
        called = true;
        return echo(c);
      },
    });
    return { out, called };
  };

  it.each([
    ['NaN', 'NaN'],
    ['Infinity', '{ a: Infinity }'],
    ['-Infinity', '[-Infinity]'],
    ['undefined in an array', '[1, undefined]'],
    ['a BigInt', '{ n: 1n }'],
    ['a cycle', '(() => { const o = {}; o.self = o; return o })()'],
    ['an accessor', '({ get a() { return 1 } })'],
    ['a Date', 'new Date(0)'],
    ['a Map', 'new Map([[1, 2]])'],
    ['a function', '{ f() {} }'],
    ['a class instance', 'new (class A { constructor() { this.x = 1 } })()'],
    ['a typed array', 'new Uint8Array(2)'],
  ])(
    'binding arguments with %s fail the run (not catchable): `binding arguments must be lossless JSON`',
    async (_, expr) => {
      const { out, called } = await argsCase(expr);
      expect(out.status).toBe('failed');
      expect(out.failure?.kind).toBe('exception');
      expect(out.failure?.message).toBe('binding arguments must be lossless JSON');
      expect(called).toBe(false);
    },
  );

  it('failure.detail says where the value failed, outside the message', async () => {
    const args = await run('await t({ a: [1, NaN] })', { bindings: ['t'], onCall: echo });
    expect(args.failure).toEqual({
      kind: 'exception',
      message: 'binding arguments must be lossless JSON',
      detail: 't: arguments.a[1] is NaN: JSON has no NaN, use null or a string',
    });
    const done = await run('return { when: new Date(0) }');
    expect(done.failure).toEqual({
      kind: 'invalid-output',
      message: 'program completion must be lossless JSON',
      detail: 'result.when is a Date: return date.toISOString()',
    });
  });

  it('a sparse array is `cannot encode a sparse JSON array`', async () => {
    const { out } = await argsCase('[1, , 3]');
    expect(out.failure).toMatchObject({ kind: 'exception', message: 'cannot encode a sparse JSON array' });
    const done = await run('return [1, , 3]');
    expect(done.failure).toMatchObject({
      kind: 'invalid-output',
      message: 'cannot encode a sparse JSON array',
    });
  });

  it('-0 becomes 0, undefined object properties are omitted, symbol keys ignored, null-prototype objects allowed', async () => {
    const seen: string[] = [];
    const out = await run(
      `const o = Object.create(null); o.k = 1;
       await t({ z: -0, u: undefined, [Symbol("s")]: 1, o, s: "\\ud800" });
       return { z: -0, u: undefined, list: [0, -0] };`,
      {
        bindings: ['t'],
        onCall: async (c) => {
          seen.push(c.argsJson);
          return echo(c);
        },
      },
    );
    expect(seen).toEqual(['{"z":0,"o":{"k":1},"s":"\\ud800"}']);
    expect(out.valueJson).toBe('{"z":0,"list":[0,0]}');
  });

  it.each([
    ['NaN', 'return NaN'],
    ['a BigInt', 'return 10n'],
    ['a Date', 'return new Date(0)'],
    ['a Map', 'return new Map()'],
    ['a cycle', 'const a = []; a.push(a); return a'],
    ['an accessor', 'return { get x() { return 1 } }'],
    ['a function', 'return () => 1'],
    ['undefined in an array', 'return [undefined]'],
    ['a Proxy whose trap throws', 'return new Proxy({}, { ownKeys() { throw new Error("no") } })'],
  ])('a returned %s is invalid-output: `program completion must be lossless JSON`', async (_, code) => {
    const out = await run(`console.log("kept"); ${code}`);
    expect(out.status).toBe('failed');
    expect(out.failure?.kind).toBe('invalid-output');
    expect(out.failure?.message).toBe('program completion must be lossless JSON');
    expect(out.logs).toEqual([{ level: 'log', text: 'kept' }]);
    expect(renderResultText(out)).toBe(
      'code run failed (invalid-output): program completion must be lossless JSON\n\nCaptured output:\nkept',
    );
  });

  it('a Proxy of plain data is read through its traps inside the isolate', async () => {
    const out = await run('return new Proxy({ a: 1 }, {})');
    expect(out.valueJson).toBe('{"a":1}');
  });

  it('a resolution that is not lossless JSON fails the run: `binding resolution must be lossless JSON`', async () => {
    for (const valueJson of ['{bad', 'NaN', '', 'undefined']) {
      const out = await run('try { return await t() } catch { return "caught" }', {
        bindings: ['t'],
        onCall: async () => ({ type: 'result', valueJson }),
      });
      expect(out.failure).toEqual({ kind: 'exception', message: 'binding resolution must be lossless JSON' });
    }
  });

  it('__proto__ keys in JSON stay own data and pollute nothing', async () => {
    const out = await run(
      `const r = await t();
       return [Object.getPrototypeOf(r) === Object.prototype, ({}).polluted === undefined,
               Object.keys(r), r.__proto__.polluted];`,
      {
        bindings: ['t'],
        onCall: async () => ({ type: 'result', valueJson: '{"__proto__":{"polluted":true}}' }),
      },
    );
    expect(JSON.parse(out.valueJson!)).toEqual([true, true, ['__proto__'], true]);
  });
});

describe('console', () => {
  it('captures the five levels in order with their level', async () => {
    const out = await run(
      `console.log("a", 1, { b: 2 }); console.info("i"); console.warn("w"); console.error(new Error("e"));
       console.debug(undefined, null, [1]); console.log();`,
    );
    expect(out.logs.map((l) => l.level)).toEqual(['log', 'info', 'warn', 'error', 'debug', 'log']);
    expect(out.logs[0]!.text).toBe('a 1 {"b":2}');
    expect(out.logs[3]!.text).toMatch(/^Error: e/);
    expect(out.logs[4]!.text).toBe('undefined null [1]');
    expect(out.logs[5]!.text).toBe('');
    expect(renderResultText(out)).toBe(out.logs.map((l) => l.text).join('\n'));
  });
});

describe('an empty environment', () => {
  it('has no fetch, require, process, timers, Buffer, SharedArrayBuffer, Atomics or WebAssembly', async () => {
    const out = await run(
      `return ["fetch", "require", "process", "setTimeout", "setInterval", "setImmediate", "queueMicrotask",
        "Buffer", "SharedArrayBuffer", "Atomics", "WebAssembly", "module", "global", "__islet_start",
        "__islet_deliver", "__islet_log", "__islet_log_wait", "__islet_call", "__islet_call_wait", "__islet_done",
        "__islet_fail"].map((n) => [n, typeof globalThis[n]]);`,
    );
    for (const [name, type] of JSON.parse(out.valueJson!) as [string, string][]) {
      expect([name, type]).toEqual([name, 'undefined']);
    }
  });

  it('ArrayBuffers cannot grow or transfer', async () => {
    const out = await run(
      `const b = new ArrayBuffer(8, { maxByteLength: 2 ** 32 });
       return [typeof b.resize, typeof b.transfer, typeof ArrayBuffer.prototype.resize];`,
    );
    expect(JSON.parse(out.valueJson!)).toEqual(['undefined', 'undefined', 'undefined']);
  });

  it('Date.now() and new Date() are fixed at clockMs; Intl formats that time', async () => {
    const clockMs = Date.UTC(2026, 9, 23, 12, 0, 0);
    const out = await run(
      `const a = Date.now(); await Promise.resolve(); let spin = 0; for (let i = 0; i < 1e6; i++) spin += i;
       return [a, Date.now(), new Date().getTime(), new (new Date(5).constructor)().getTime(), Date(),
               new Date(0).toISOString(), Date.UTC(2000, 0, 1),
               new Intl.DateTimeFormat("en-US", { timeZone: "UTC", year: "numeric" }).format()];`,
      { clockMs },
    );
    const [a, b, c, d, e, f, g, h] = JSON.parse(out.valueJson!);
    expect([a, b, c, d]).toEqual([clockMs, clockMs, clockMs, clockMs]);
    expect(e).toBe(new Date(clockMs).toString());
    expect(f).toBe('1970-01-01T00:00:00.000Z');
    expect(g).toBe(Date.UTC(2000, 0, 1));
    expect(h).toBe('2026');
  });

  it('Math.random() is seeded: same seed, same sequence; another seed, another', async () => {
    const code = 'return [Math.random(), Math.random(), Math.random()]';
    const a = await run(code, { randomSeed: 'run-1' });
    const b = await run(code, { randomSeed: 'run-1' });
    const c = await run(code, { randomSeed: 'run-2' });
    expect(a.valueJson).toBe(b.valueJson);
    expect(a.valueJson).not.toBe(c.valueJson);
    for (const x of JSON.parse(a.valueJson!) as number[]) {
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
    }
  });

  it('each run gets a fresh isolate: nothing is kept from one run to the next', async () => {
    await run('globalThis.leftover = 1; Object.prototype.polluted = 1; Math.random = () => 0;', {
      randomSeed: 'x',
    });
    const out = await run('return [typeof leftover, typeof ({}).polluted, Math.random() === 0]', {
      randomSeed: 'x',
    });
    expect(JSON.parse(out.valueJson!)).toEqual(['undefined', 'undefined', false]);
  });
});
