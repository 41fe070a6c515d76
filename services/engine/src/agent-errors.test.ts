/**
 * Errors an agent can act on: where the program failed (its own line and column, a stack of its
 * own frames), which value could not be returned and how to return it, and what exists when the
 * program named an App or tool that does not. The contract's message texts stay as they are.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from './index.ts';
import type { BindingOutcome, ExecuteOptions } from './types.ts';

const engine = createEngine();
afterAll(() => engine.close());

const ok = async (): Promise<BindingOutcome> => ({ type: 'result', valueJson: '{"ok":true}' });

function run(code: string, options: ExecuteOptions = {}) {
  return engine.execute(code, { limits: { timeoutMs: 5000 }, ...options });
}

describe('where the program failed', () => {
  it("an uncaught TypeError carries the program's line and column, the message unchanged", async () => {
    const out = await run('const a = 1;\nconst o = null;\nreturn o.x;');
    expect(out.failure).toMatchObject({
      kind: 'exception',
      message: "TypeError: Cannot read properties of null (reading 'x')",
      line: 3,
      column: 10,
    });
    expect(out.failure?.stack).toBe(
      "TypeError: Cannot read properties of null (reading 'x')\n    at program:3:10",
    );
  });

  it('the stack keeps the program frames only, with function names, after an await', async () => {
    const out = await run(
      'function inner() {\n  throw new Error("boom");\n}\nfunction outer() { inner(); }\nawait Promise.resolve();\nouter();',
    );
    expect(out.failure).toMatchObject({ message: 'Error: boom', line: 2, column: 9 });
    expect(out.failure?.stack).toBe(
      'Error: boom\n    at inner (program:2:9)\n    at outer (program:4:20)\n    at program:6:1',
    );
    expect(out.failure?.stack).not.toContain('harness');
  });

  it('a thrown string has no location (and no harness path)', async () => {
    const out = await run('throw "plain"');
    expect(out.failure).toEqual({ kind: 'exception', message: 'plain' });
  });
});

describe('values that cannot be carried name their path, type and the fix', () => {
  it.each([
    ['return { report: { when: new Date(0) } }', 'result.report.when is a Date: return date.toISOString()'],
    ['return { m: new Map([[1, 2]]) }', 'result.m is a Map: return Object.fromEntries(map)'],
    ['return [new Set([1])]', 'result[0] is a Set: return [...set]'],
    ['return { n: 10n }', 'result.n is a bigint: return String(n), or Number(n) when it is small'],
    [
      'class Point { constructor() { this.x = 1 } }\nreturn { p: new Point() }',
      'result.p is a Point instance: return a plain object ({ ...value })',
    ],
    ['return { f() {} }', 'result.f is a function: call it and return what it returns'],
    ['return [undefined]', 'result[0] is undefined: use null'],
  ])('%s', async (code, detail) => {
    const out = await run(code);
    expect(out.failure).toEqual({
      kind: 'invalid-output',
      message: 'program completion must be lossless JSON',
      detail,
    });
  });

  it('binding arguments name the binding and the field', async () => {
    const out = await run('await apps.cal.add({ at: new Date(0) })', { bindings: ['cal.add'], onCall: ok });
    expect(out.failure).toEqual({
      kind: 'exception',
      message: 'binding arguments must be lossless JSON',
      detail: 'cal.add: arguments.at is a Date: return date.toISOString()',
    });
  });
});

describe('names that do not exist list the ones that do', () => {
  const bindings = ['invoices.create', 'invoices.get', 'calendar.list'];

  it('an App that is not in the run', async () => {
    const out = await run('return await apps.billing.create({})', { bindings, onCall: ok });
    expect(out.failure?.message).toBe(
      "TypeError: apps.billing is not an App of this run; this run's Apps: invoices, calendar",
    );
    expect(out.failure?.line).toBe(1);
  });

  it('a tool the App does not have', async () => {
    const out = await run('return await apps.invoices.delete({})', { bindings, onCall: ok });
    expect(out.failure?.message).toBe(
      "TypeError: apps.invoices.delete is not a tool of invoices; this run's tools of invoices: create, get",
    );
  });

  it('apps.call with an unknown name, and a run without Apps', async () => {
    const out = await run('return await apps.call("invoices.void", {})', { bindings, onCall: ok });
    expect(out.failure?.message).toBe(
      "TypeError: unknown binding: invoices.void; this run's bindings: invoices.create, invoices.get, calendar.list",
    );
    const none = await run('return await apps.x.y()');
    expect(none.failure?.message).toBe('TypeError: apps.x is not an App of this run; this run has no Apps');
  });

  it('probing still works: `in`, await of a namespace, JSON of apps', async () => {
    const out = await run(
      'const a = await apps.invoices; return ["billing" in apps, "invoices" in apps, typeof a.get, JSON.stringify(apps.invoices)]',
      { bindings, onCall: ok },
    );
    expect(out.status, JSON.stringify(out.failure)).toBe('completed');
    expect(JSON.parse(out.valueJson!)).toEqual([false, true, 'function', '{}']);
  });
});
