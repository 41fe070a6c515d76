import { createSealer, type Sealer } from '@islet/core';
import { describe, expect, it, vi } from 'vitest';
import { memoizeOwnSeals } from './own-seal-memo.ts';

function countingSealer() {
  const inner = createSealer({ keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: 'k1' });
  const counts = { seal: 0, open: 0 };
  const sealer: Sealer = {
    seal: (p, bind) => {
      counts.seal++;
      return inner.seal(p, bind);
    },
    open: (s, bind) => {
      counts.open++;
      return inner.open(s, bind);
    },
  };
  return { sealer, counts, inner };
}

describe('memoizeOwnSeals', () => {
  it('opens what it sealed from memory, and everything else with the wrapped sealer', () => {
    const { sealer, counts, inner } = countingSealer();
    const memo = memoizeOwnSeals(sealer);
    const sealed = memo.seal('return 1');
    // A real ciphertext: any other process with the key opens it.
    expect(inner.open(sealed)).toBe('return 1');
    expect(memo.open(sealed)).toBe('return 1');
    expect(memo.open(sealed)).toBe('return 1');
    expect(counts.open).toBe(0);
    expect(memo.hits).toBe(2);
    const foreign = inner.seal('sealed elsewhere');
    expect(memo.open(foreign)).toBe('sealed elsewhere');
    expect(counts.open).toBe(1);
  });

  it('a bound text opens from memory with its own bind only; another bind goes to the sealer and fails', () => {
    const { sealer, counts, inner } = countingSealer();
    const memo = memoizeOwnSeals(sealer);
    const sealed = memo.seal('["return 1",{}]', 'pick\0run_a');
    expect(inner.open(sealed, 'pick\0run_a')).toBe('["return 1",{}]');
    expect(memo.open(sealed, 'pick\0run_a')).toBe('["return 1",{}]');
    expect(counts.open).toBe(0);
    // Copied to another run's record or field, or read unbound: not answered from memory.
    expect(() => memo.open(sealed, 'pick\0run_b')).toThrow(/failed authentication/);
    expect(() => memo.open(sealed, 'ended\0run_a')).toThrow(/failed authentication/);
    expect(() => memo.open(sealed)).toThrow(/failed authentication/);
    expect(counts.open).toBe(3);
    expect(memo.hits).toBe(1);
  });

  it('seals the same text twice to two ciphertexts, each opening to it', () => {
    const { sealer, counts } = countingSealer();
    const memo = memoizeOwnSeals(sealer);
    const a = memo.seal('same');
    const b = memo.seal('same');
    expect(a).not.toBe(b);
    expect([memo.open(a), memo.open(b)]).toEqual(['same', 'same']);
    expect(counts).toEqual({ seal: 2, open: 0 });
  });

  it('a tampered ciphertext is not in memory: the wrapped sealer refuses it', () => {
    const memo = memoizeOwnSeals(countingSealer().sealer);
    const sealed = memo.seal('secret');
    const tampered = `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'AB' : 'AA'}`;
    expect(() => memo.open(tampered)).toThrow();
  });

  it('does not remember a text that is not well-formed UTF-16: it opens to what the seal stored', () => {
    const { sealer, counts } = countingSealer();
    const memo = memoizeOwnSeals(sealer);
    // A lone surrogate is sealed as UTF-8's U+FFFD: every opener of the record reads that.
    const lone = memo.seal('one \ud800 two');
    expect(memo.open(lone)).toBe('one \ufffd two');
    expect(counts.open).toBe(1);
    // A pair (two-byte, well-formed) is remembered as any text is.
    const pair = memo.seal('one \u{1f600} two');
    expect(memo.open(pair)).toBe('one \u{1f600} two');
    expect(counts.open).toBe(1);
  });

  it('forgets the oldest past its entry and character bounds, and never holds a large value', () => {
    const { sealer, counts } = countingSealer();
    const memo = memoizeOwnSeals(sealer, { maxEntries: 2, maxValueChars: 10 });
    const first = memo.seal('one');
    const second = memo.seal('two');
    const third = memo.seal('three');
    expect([memo.open(second), memo.open(third)]).toEqual(['two', 'three']);
    expect(counts.open).toBe(0);
    expect(memo.open(first)).toBe('one');
    expect(counts.open).toBe(1);
    const large = memo.seal('x'.repeat(11));
    expect(memo.open(large)).toBe('x'.repeat(11));
    expect(counts.open).toBe(2);
    // The large value pushed nothing out.
    expect(memo.open(third)).toBe('three');
    expect(counts.open).toBe(2);

    // A one-character value's ciphertext is 48 characters: two entries hold 98, a third passes 120.
    const byChars = memoizeOwnSeals(sealer, { maxChars: 120 });
    const a = byChars.seal('a');
    expect(a.length + 1).toBe(49);
    const b = byChars.seal('b');
    byChars.seal('c');
    const before = counts.open;
    expect(byChars.open(b)).toBe('b');
    expect(counts.open).toBe(before);
    expect(byChars.open(a)).toBe('a');
    expect(counts.open).toBe(before + 1);
  });

  it("keys its entries by the ciphertext's tail: no Map key or lookup of the whole text or text + bind", () => {
    const memo = memoizeOwnSeals(countingSealer().sealer);
    const plain = JSON.stringify(['export default () => 1;\n'.repeat(32), { bindings: [] }]);
    const sets = vi.spyOn(Map.prototype, 'set');
    const gets = vi.spyOn(Map.prototype, 'get');
    try {
      const sealed = memo.seal(plain, 'pick\0run_a');
      expect(memo.open(sealed, 'pick\0run_a')).toBe(plain);
      expect(memo.hits).toBe(1);
      // A submit's pick was keyed `<sealed>\0<bind>` (~1.2 KB flattened and hashed at each seal
      // and open; test/bench/README.md, round 50 `gateway-submit`).
      const keys = [...sets.mock.calls, ...gets.mock.calls].map(([key]) => key);
      expect(keys.filter((k) => typeof k === 'string' && k.includes(sealed.slice(0, 40)))).toEqual([]);
      expect(keys).toContain(sealed.slice(-24));
    } finally {
      sets.mockRestore();
      gets.mockRestore();
    }
  });

  it('a ciphertext changed away from its tail (its IV) is not answered from memory: the sealer refuses it', () => {
    const { sealer, counts } = countingSealer();
    const memo = memoizeOwnSeals(sealer);
    const sealed = memo.seal('secret', 'pick\0run_a');
    const [v, kid, iv, ...rest] = sealed.split('.');
    const changedIv = [v, kid, `${iv!.startsWith('A') ? 'B' : 'A'}${iv!.slice(1)}`, ...rest].join('.');
    expect(changedIv.slice(-24)).toBe(sealed.slice(-24));
    expect(() => memo.open(changedIv, 'pick\0run_a')).toThrow(/failed authentication/);
    expect(counts.open).toBe(1);
    expect(memo.open(sealed, 'pick\0run_a')).toBe('secret');
    expect(memo.hits).toBe(1);
  });

  it('two ciphertexts with the same tail: the newer is remembered, the older opened by the sealer', () => {
    // A wrapped sealer whose texts share their last 24 characters (a real one's never do).
    const tail = 'T'.repeat(24);
    const texts = new Map<string, string>();
    let n = 0;
    let opens = 0;
    const memo = memoizeOwnSeals({
      seal(plain) {
        const sealed = `v1.k1.${n++}.${tail}`;
        texts.set(sealed, plain);
        return sealed;
      },
      open(sealed) {
        opens++;
        return texts.get(sealed)!;
      },
    });
    const older = memo.seal('older');
    const newer = memo.seal('newer');
    expect(memo.open(newer)).toBe('newer');
    expect(opens).toBe(0);
    expect(memo.open(older)).toBe('older');
    expect(opens).toBe(1);
  });
});
