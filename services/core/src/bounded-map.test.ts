import { describe, expect, it, vi } from 'vitest';
import { BoundedMap } from './bounded-map.ts';

describe('BoundedMap', () => {
  it('holds at most max entries and at least the last max / 2 set, without iterating a Map', () => {
    const m = new BoundedMap<string, number>(100);
    const keys = vi.spyOn(Map.prototype, 'keys');
    try {
      for (let i = 0; i < 1000; i++) {
        m.set(`k${i}`, i);
        expect(m.size).toBeLessThanOrEqual(100);
      }
      expect(keys).not.toHaveBeenCalled();
    } finally {
      keys.mockRestore();
    }
    for (let i = 950; i < 1000; i++) expect(m.get(`k${i}`)).toBe(i);
    expect(m.has('k0')).toBe(false);
    expect(m.get('k0')).toBe(undefined);
  });

  it('reads the newer value of a key set again; a delete removes it from both generations', () => {
    const m = new BoundedMap<string, number | undefined>(4);
    m.set('a', 1);
    m.set('b', 2);
    // 'a' is now in the older generation; set again, the older copy goes.
    m.set('a', 3);
    expect(m.get('a')).toBe(3);
    expect(m.size).toBe(2);
    expect(m.delete('a')).toBe(true);
    expect(m.has('a')).toBe(false);
    expect(m.get('a')).toBe(undefined);
    expect(m.delete('a')).toBe(false);
    // An undefined value is a value: not read through to the older generation.
    m.set('b', undefined);
    expect(m.has('b')).toBe(true);
    expect(m.get('b')).toBe(undefined);
    m.set('c', 5);
    expect([...m.keys()].sort()).toEqual(['b', 'c']);
    m.clear();
    expect(m.size).toBe(0);
  });
});
