import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseLosslessJson } from './lossless-json.ts';

/** JSON.parse's calls with a reviver (the slow parse, each value's source kept). */
const withReviver = () => {
  const spy = vi.spyOn(JSON, 'parse');
  return () => spy.mock.calls.filter((args) => typeof args[1] === 'function').length;
};

describe('parseLosslessJson', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('parses an answer with no lossy number once, without the reviver', () => {
    const revived = withReviver();
    const text = JSON.stringify({
      ok: true,
      items: [{ id: 9007199254740991, price: 0.1, small: -2.5e-3, deep: [[[1, -0, null, 's']]] }],
      '9007199254740993': 'a key is not a number',
    });
    expect(parseLosslessJson(text)).toEqual({ ok: true, value: JSON.parse(text) });
    expect(revived()).toBe(0);
  });

  it('refuses an integer past 2^53 and an overflow as before, with the source and the key', () => {
    const revived = withReviver();
    expect(parseLosslessJson('{"a":{"id":9007199254740993}}')).toEqual({
      ok: false,
      source: '9007199254740993',
      key: 'id',
    });
    expect(parseLosslessJson('[1,1e400]')).toEqual({ ok: false, source: '1e400', key: '1' });
    expect(parseLosslessJson('-1E+999')).toEqual({ ok: false, source: '-1E+999', key: '' });
    expect(revived()).toBe(3);
  });

  it('passes a large float written as a float (the reviver gives the verdict)', () => {
    expect(parseLosslessJson('{"big":1e20,"x":123456789012345678901.5}')).toEqual({
      ok: true,
      value: JSON.parse('{"big":1e20,"x":123456789012345678901.5}'),
    });
  });

  it('throws on text that is not JSON', () => {
    expect(() => parseLosslessJson('{"a":')).toThrow(SyntaxError);
  });
});
