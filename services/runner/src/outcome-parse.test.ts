/**
 * A Completed outcome's value parsed once (round 49 `engine-timers-2`): `mapOutcome` parsed it for
 * the result and the engine's `renderResultText` parsed it again for the text (33923ae1: two
 * `JSON.parse` a run). The text must stay byte for byte 33923ae1's: the expected texts below are
 * literal, and pass on 33923ae1 as on the head (the identity kept); the parse count fails there.
 */
import { type RunOutcome, renderResultText } from '@islet/engine';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mapOutcome } from './outcome-mapping.ts';

const outcome = (valueJson: string | undefined, lines: string[] = []): RunOutcome =>
  ({
    status: 'completed',
    ...(valueJson === undefined ? {} : { valueJson }),
    logs: lines.map((text) => ({ level: 'log', text })),
    outputTruncated: false,
    calls: [],
    durationMs: 1,
  }) as RunOutcome;

/** [valueJson, printed lines, the text 33923ae1 renders, the result's value, textIsResult]. */
const CASES: [string | undefined, string[], string, unknown, boolean][] = [
  [undefined, [], '(run_code completed with no output)', undefined, true],
  [undefined, ['a', ''], 'a\n', undefined, true],
  ['-0', [], '-0', -0, false],
  ['1.0', ['x'], 'x\n1.0', 1, false],
  ['1e2', [], '1e2', 100, false],
  ['12345678901234567890123', [], '12345678901234567890123', 1.2345678901234568e22, false],
  ['9007199254740993', [], '9007199254740993', 9007199254740992, false],
  ['"\\u00e9\\ud83d\\ude00\\n"', [], 'é😀\n', 'é😀\n', true],
  ['"\\u2028"', ['p'], 'p\n\u2028', '\u2028', true],
  ['{"s":"\\u00e9"}', [], '{"s":"\\u00e9"}', { s: 'é' }, false],
  ['{"s":"é"}', [], '{"s":"é"}', { s: 'é' }, true],
  ['{"a" : 1}', [], '{"a" : 1}', { a: 1 }, false],
  ['[1,2,{"b":null}]', ['l1', 'l2'], 'l1\nl2\n[1,2,{"b":null}]', [1, 2, { b: null }], true],
  ['""', [], '', '', true],
  ['"x"', [], 'x', 'x', true],
  ['null', [], 'null', null, true],
  ['true', [], 'true', true, true],
  // Not JSON (no host sends it; the engine checks it): shown as it is, kept as a string.
  ['not json', [], 'not json', 'not json', true],
];

describe("a Completed outcome's value", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("renders byte for byte 33923ae1's text, with the same result", () => {
    for (const [valueJson, lines, text, value, own] of CASES) {
      const out = outcome(valueJson, lines);
      const mapped = mapOutcome(out);
      if (mapped.kind !== 'final' || mapped.result._tag !== 'Completed') throw new Error('not Completed');
      expect(mapped.text).toBe(text);
      expect(mapped.text).toBe(renderResultText(out));
      // -0 stays -0, as 33923ae1's parse gave it.
      if (typeof value !== 'object' || value === null)
        expect(Object.is(mapped.result.value, value)).toBe(true);
      else expect(mapped.result.value).toEqual(value);
      expect('value' in mapped.result).toBe(valueJson !== undefined);
      expect(mapped.textIsResult).toBe(own);
    }
  });

  it('is parsed once a run', () => {
    const parse = vi.spyOn(JSON, 'parse');
    for (const [valueJson, lines] of CASES) {
      parse.mockClear();
      mapOutcome(outcome(valueJson, lines));
      // 33923ae1: 2 (the result's parse, then the engine's text's).
      expect(parse).toHaveBeenCalledTimes(valueJson === undefined ? 0 : 1);
    }
  });
});
