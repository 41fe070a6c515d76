/**
 * A waited submit's answer from its pushed end (round 51 `gateway-end`): the result's JSON text,
 * as the end was opened, is spliced into the answer, not parsed and stringified again, and the
 * answer is byte for byte what the record's `JSON.stringify` gives — the same bytes as a read of
 * the same run (`GET /v1/code-runs/:id`, unchanged) and as the previous release's answer — across
 * values: numbers, strings with escapes, unicode, nested, an absent value, large values, logs; a
 * result under 256 characters, an end too large to push and a Failed end are not spliced. Real redis-server, the gateway app through inject, no runner: the test
 * ends each run.
 */
import type { CodeRunRecord, RunResult } from '@islet/protocol';
import { RESULT_JSON_KEEP_MIN_CHARS } from '@islet/runs';
import { describe, expect, it } from 'vitest';
import { auth, onAppFixture, run } from '../test/app-fixture.ts';
import { nextListen } from '../test/next-listen.ts';
import { recordJson } from './record.ts';

const { app, deps, key } = await onAppFixture();

type Completed = Extract<RunResult, { _tag: 'Completed' }>;

/** The engine's text of a Completed result (runs' `completedText`): stored as `0`, rendered on read. */
function textOf(result: Completed): string {
  const parts = result.logs.map((l) => l.text);
  if (result.value !== undefined)
    parts.push(typeof result.value === 'string' ? result.value : JSON.stringify(result.value));
  return parts.length === 0 ? '(run_code completed with no output)' : parts.join('\n');
}

const logs = (n: number, text = (i: number) => `line ${i}`) =>
  Array.from({ length: n }, (_, i) => ({ level: 'log' as const, text: text(i) }));

/** Values as a program returns them: what a run_code result's `value` may be (documents 000, 003). */
const VALUES: [string, unknown][] = [
  ['an integer', 1],
  ['a negative float', -1.5e-7],
  ['a large number', 1e21],
  ['negative zero', -0],
  ['true', true],
  ['null', null],
  ['a string with escapes', 'quote " backslash \\ tab \t newline \n nul \u0000 del \u007f'],
  ['unicode', 'héllo — 日本語 🎉 \u2028 \u2029'],
  ['a lone surrogate', 'a\ud800b'],
  ['nested', { a: [1, { b: 'c', d: [null, true] }], '10': 'ten', '2': 'two', z: { y: {} } }],
  ['an empty array', []],
  // Near the largest end a push carries (END_PUSH_MAX_BYTES, 32 KiB sealed: base64 of ~24 KB).
  ['a large string', 'x'.repeat(20_000)],
  ['a large array', Array.from({ length: 900 }, (_, i) => ({ i, s: `v${i}` }))],
];

/** `JSON.stringify` calls, during `during`, given an object with its own `result` (a record). */
async function recordStringifies<T>(during: () => Promise<T>): Promise<{ out: T; count: number }> {
  const real = JSON.stringify;
  let count = 0;
  JSON.stringify = ((value: unknown, ...rest: unknown[]) => {
    if (value && typeof value === 'object' && Object.hasOwn(value, 'result')) count++;
    return (real as (...a: unknown[]) => string)(value, ...rest);
  }) as typeof JSON.stringify;
  try {
    return { out: await during(), count };
  } finally {
    JSON.stringify = real;
  }
}

/** A waited submit whose run the test ends with `end`; its answer and the same run read by GET. */
async function waitedAnswer(end: { status: 'Completed' | 'Failed'; result: RunResult; text: string }) {
  const { listened, restore } = nextListen(deps.hub);
  try {
    const answering = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10' },
      payload: run({ sessionId: 'end-splice', code: 'return globalThis.value' }),
    });
    const id = await listened;
    const stored = await deps.runs.get(id);
    if (!stored?.pushEnd) throw new Error('the waited run was not stored to push its end');
    const { out: answer, count } = await recordStringifies(async () => {
      await deps.runs.finish(stored, end);
      return answering;
    });
    const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
    return { answer, read, recordStringifies: count };
  } finally {
    restore();
  }
}

/** A waited Completed end's answer (`waitedAnswer`), its text rendered as a Completed run's is. */
const completedAnswer = (result: Completed) =>
  waitedAnswer({ status: 'Completed', result, text: textOf(result) });

/** The answer is the run read back, byte for byte, after `stringifies` whole-record stringifies. */
function expectAsRead(out: Awaited<ReturnType<typeof waitedAnswer>>, stringifies: number): void {
  expect(out.answer.statusCode).toBe(200);
  expect(out.answer.body).toBe(out.read.body);
  expect(out.recordStringifies).toBe(stringifies);
}

describe("a waited submit's answer from its pushed end", () => {
  it.each(VALUES)('is the record byte for byte, its result not stringified again: %s', async (_, value) => {
    // Eight printed lines: every result's text over the least one kept (RESULT_JSON_KEEP_MIN_CHARS).
    const result: Completed = { _tag: 'Completed', value, logs: logs(8) };
    const out = await completedAnswer(result);
    const { answer, read } = out;
    expect(read.statusCode).toBe(200);
    // The same bytes and type as the run read back (a record stringified whole, unchanged).
    expectAsRead(out, 0);
    expect(answer.headers['content-type']).toBe(read.headers['content-type']);
    expect(answer.headers['content-length']).toBe(read.headers['content-length']);
    const body = answer.json() as CodeRunRecord;
    expect(body.result).toEqual(JSON.parse(JSON.stringify(result)));
    expect(JSON.stringify(body)).toBe(answer.body);
  });

  it('splices a result with no value and one with many logs (escapes and unicode in the lines)', async () => {
    for (const result of [
      { _tag: 'Completed', logs: logs(10) },
      { _tag: 'Completed', value: { n: 1 }, logs: logs(200, (i) => `"${i}"\t\\ é 🎉 \u0001`) },
    ] as Completed[]) {
      const out = await completedAnswer(result);
      expectAsRead(out, 0);
      expect(out.answer.headers['content-type']).toBe('application/json; charset=utf-8');
    }
  });

  it('answers a small result (its text under 256 characters) as before: the record stringified whole', async () => {
    for (const result of [
      { _tag: 'Completed', value: 1, logs: [] },
      { _tag: 'Completed', logs: [] },
      { _tag: 'Completed', value: { ok: true, s: 'é"\n' }, logs: logs(3) },
    ] as Completed[]) {
      // The fixture's premise (a text, not a time): each result is one the splice leaves alone.
      expect(JSON.stringify(result).length < RESULT_JSON_KEEP_MIN_CHARS).toBe(true);
      expectAsRead(await completedAnswer(result), 1);
    }
  });

  it('answers an end too large to push as before: the run read back, its record stringified whole', async () => {
    const result: Completed = { _tag: 'Completed', value: 'y'.repeat(60_000), logs: logs(2) };
    expectAsRead(await completedAnswer(result), 1);
  });

  it('answers a Failed end (its text stored, not spliced) as before: the record stringified whole', async () => {
    const result: RunResult = {
      _tag: 'Failed',
      reason: 'Error',
      kind: 'exception',
      message: 'boom "x"',
      logs: logs(2),
      line: 1,
      column: 7,
    };
    expectAsRead(
      await waitedAnswer({ status: 'Failed', result, text: 'code run failed (exception): boom "x"' }),
      1,
    );
  });
});

describe('recordJson', () => {
  const base: CodeRunRecord = {
    id: 'r1',
    session: 's1',
    turn: 't1',
    callId: 'c1',
    status: 'Completed',
    code: 'return "\\u0000"',
    reason: 'why ✓',
    calls: [{ index: 0, binding: 'apps.a.b', operationId: 'op', outcome: { _tag: 'Pending' } }],
    createdAt: 1,
    updatedAt: 2,
    result: { _tag: 'Completed', value: { '1': 1, a: 'b' }, logs: [] },
  };
  const tails: Partial<CodeRunRecord>[] = [
    {},
    { text: 't' },
    { text: 't', style: 'code-mode' },
    { style: 'run_code', connections: ['a', 'b'] },
    {
      text: '"',
      style: 'run_code',
      connections: [],
      limits: { timeoutMs: null, memoryMb: 64, outputBytes: 65536, outputCap: 'shared', settingsVersion: 3 },
    },
  ];
  it.each(tails.map((t, i) => [i, t] as const))(
    "is the record's JSON.stringify with the result's text spliced in (tail %i)",
    (_, tail) => {
      const record = { ...base, ...tail };
      expect(recordJson(record, JSON.stringify(record.result))).toBe(JSON.stringify(record));
    },
  );

  it('follows the record it is given: a field it did not know of, and the result in another place', () => {
    const added = { ...base, later: { n: 1 } } as CodeRunRecord;
    expect(recordJson(added, JSON.stringify(added.result))).toBe(JSON.stringify(added));
    const { result, ...rest } = base;
    const first = { result, ...rest };
    expect(recordJson(first, JSON.stringify(result))).toBe(JSON.stringify(first));
  });
});
