/**
 * The run page's highlighter: one linear pass over a bounded prefix. The attack is a 600 KB
 * program with unclosed `/*` comments (a lazy regular expression retried from every later `/*`
 * scanned to the end each time). Asserted by what was produced (covered prefix, token counts),
 * never by time.
 */
import { describe, expect, it } from 'vitest';
import { HIGHLIGHT_LIMIT_CHARS, tokenize } from '../web/highlight-tokens.ts';

const joined = (code: string, limit?: number) =>
  tokenize(code, limit)
    .tokens.map((t) => t.text)
    .join('');

describe('tokenize', () => {
  it('splits comments, strings, numbers and keywords, and loses no character', () => {
    const code =
      'const n = 42; // answer\n/* block */ return `t $[n]` + "q\\"x" + \'s\' + obj.default + 1e-3;';
    const { tokens, truncated } = tokenize(code);
    expect(truncated).toBe(false);
    expect(joined(code)).toBe(code);
    const of = (kind: string) => tokens.filter((t) => t.kind === kind).map((t) => t.text);
    expect(of('keyword')).toEqual(['const', 'return']);
    expect(of('comment')).toEqual(['// answer', '/* block */']);
    expect(of('string')).toEqual(['`t $[n]`', '"q\\"x"', "'s'"]);
    expect(of('number')).toEqual(['42', '1e-3']);
  });

  it('an unclosed /* in a 600 KB program is one comment up to the highlight limit', () => {
    const attack = `const a = 1;\n/*${'x/*'.repeat(200_000)}`;
    expect(attack.length).toBeGreaterThan(600_000);
    const { tokens, covered, truncated } = tokenize(attack);
    expect(truncated).toBe(true);
    expect(covered).toBe(HIGHLIGHT_LIMIT_CHARS);
    // const, a, =, 1; then a single comment token: nothing is retried from the later `/*`s.
    expect(tokens.map((t) => t.kind)).toEqual(['keyword', 'plain', 'number', 'plain', 'comment']);
    expect(tokens.at(-1)?.text.length).toBe(HIGHLIGHT_LIMIT_CHARS - 'const a = 1;\n'.length);
    expect(joined(attack)).toBe(attack.slice(0, HIGHLIGHT_LIMIT_CHARS));
  });

  it('token count grows linearly with the program, never past the prefix', () => {
    // Unclosed quotes and template literals, each costing a scan to the end in a naive matcher.
    const unit = '"a `b /* \'c\n';
    const counts = [1_000, 2_000, 4_000].map(
      (n) => tokenize(unit.repeat(n), Number.POSITIVE_INFINITY).tokens.length,
    );
    expect(counts[1]).toBe(counts[0]! * 2);
    expect(counts[2]).toBe(counts[0]! * 4);
    const big = tokenize(unit.repeat(100_000));
    expect(big.covered).toBe(HIGHLIGHT_LIMIT_CHARS);
    expect(big.tokens.length).toBeLessThanOrEqual(HIGHLIGHT_LIMIT_CHARS);
  });

  it('a template literal left open runs to the prefix end; a quote ends at its line', () => {
    const { tokens } = tokenize('`open\nstill open');
    expect(tokens).toEqual([{ kind: 'string', text: '`open\nstill open' }]);
    const q = tokenize('"open\nconst');
    expect(q.tokens.map((t) => t.kind)).toEqual(['string', 'plain', 'keyword']);
  });
});
