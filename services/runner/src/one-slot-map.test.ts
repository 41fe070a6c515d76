/**
 * OneSlotMap and OneSlotSet (one-slot-map.ts, one-slot-set.ts) answer as a `Map` and a `Set` do for
 * the same operations (sizes, lookups, insertion order, deletes and adds during an iteration), and
 * a map or set going from one entry to none and back makes no `Map`/`Set` behind its front.
 */
import { describe, expect, it } from 'vitest';
import { OneSlotMap } from './one-slot-map.ts';
import { OneSlotSet } from './one-slot-set.ts';

/** A seeded walk of sets and deletes over a few keys, applied to both; their views compared after each step. */
function walk(seed: number, steps: number) {
  let x = seed;
  const next = () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return x;
  };
  const map = new Map<string | number, number>();
  const ours = new OneSlotMap<string | number, number>();
  const set = new Set<string | number>();
  const oursSet = new OneSlotSet<string | number>();
  const keys: (string | number)[] = ['a', 'b', 'c', 'd', 1, Number.NaN, 0];
  for (let i = 0; i < steps; i++) {
    const key = keys[next() % keys.length] as string | number;
    const op = next() % 3;
    if (op === 2) {
      expect(ours.delete(key)).toBe(map.delete(key));
      expect(oursSet.delete(key)).toBe(set.delete(key));
    } else {
      expect(ours.set(key, i)).toBe(ours);
      map.set(key, i);
      oursSet.add(key);
      set.add(key);
    }
    expect(ours.size).toBe(map.size);
    expect([...ours]).toEqual([...map]);
    expect([...ours.keys()]).toEqual([...map.keys()]);
    expect([...ours.values()]).toEqual([...map.values()]);
    const each: unknown[] = [];
    ours.forEach((v, k) => {
      each.push([k, v]);
    });
    expect(each).toEqual([...map.entries()]);
    for (const k of keys) {
      expect(ours.has(k)).toBe(map.has(k));
      expect(ours.get(k)).toBe(map.get(k));
      expect(oursSet.has(k)).toBe(set.has(k));
    }
    expect(oursSet.size).toBe(set.size);
    expect([...oursSet]).toEqual([...set]);
  }
}

describe('OneSlotMap and OneSlotSet', () => {
  it('answer as a Map and a Set over seeded walks of sets and deletes', () => {
    for (const seed of [1, 7, 42, 2024]) walk(seed, 300);
  });

  it('-0 and +0 are one key, NaN equals NaN, as in a Map', () => {
    const ours = new OneSlotMap<number, string>();
    ours.set(-0, 'zero');
    expect(ours.get(0)).toBe('zero');
    ours.set(Number.NaN, 'nan');
    expect(ours.get(Number.NaN)).toBe('nan');
    expect(ours.size).toBe(2);
  });

  it('an iteration sees deletes made during it and visits entries added during it, as a Map does', () => {
    for (const deleteFront of [false, true]) {
      const map = new Map<string, number>([['a', 1]]);
      const ours = new OneSlotMap<string, number>().set('a', 1);
      const set = new Set(['a']);
      const oursSet = new OneSlotSet<string>().add('a');
      const seen = (m: Iterable<[string, number]>, del: (k: string) => void, add: (k: string) => void) => {
        const out: string[] = [];
        for (const [k] of m) {
          out.push(k);
          if (k === 'a') {
            if (deleteFront) del('a');
            add('b');
          }
          if (k === 'b') add('c');
        }
        return out;
      };
      const want = seen(
        map,
        (k) => map.delete(k),
        (k) => map.set(k, 0),
      );
      expect(
        seen(
          ours,
          (k) => ours.delete(k),
          (k) => ours.set(k, 0),
        ),
      ).toEqual(want);
      expect([...ours]).toEqual([...map]);
      const setSeen = (s: Iterable<string>, del: (k: string) => void, add: (k: string) => void) => {
        const out: string[] = [];
        for (const k of s) {
          out.push(k);
          if (k === 'a') {
            if (deleteFront) del('a');
            add('b');
          }
        }
        return out;
      };
      expect(
        setSeen(
          oursSet,
          (k) => oursSet.delete(k),
          (k) => oursSet.add(k),
        ),
      ).toEqual(
        setSeen(
          set,
          (k) => set.delete(k),
          (k) => set.add(k),
        ),
      );
      // An iteration left part-way (a `break`) ends: the front is taken again afterwards.
      for (const _ of ours) break;
      ours.clear();
      ours.set('z', 1);
      expect([...ours]).toEqual([['z', 1]]);
    }
  });

  it('a map and a set going from one entry to none and back make nothing behind their front', () => {
    const RealMap = globalThis.Map;
    const RealSet = globalThis.Set;
    let made = 0;
    globalThis.Map = class extends RealMap<unknown, unknown> {
      constructor(...args: unknown[]) {
        super(...(args as []));
        made++;
      }
    } as MapConstructor;
    globalThis.Set = class extends RealSet<unknown> {
      constructor(...args: unknown[]) {
        super(...(args as []));
        made++;
      }
    } as SetConstructor;
    try {
      const ours = new OneSlotMap<string, number>();
      const oursSet = new OneSlotSet<string>();
      for (let i = 0; i < 100; i++) {
        const token = `t${i}`;
        ours.set(token, i);
        oursSet.add(token);
        expect(ours.get(token)).toBe(i);
        expect(oursSet.has(token)).toBe(true);
        expect(ours.delete(token)).toBe(true);
        expect(oursSet.delete(token)).toBe(true);
        expect(ours.size + oursSet.size).toBe(0);
      }
      expect(made).toBe(0);
      // A second entry goes behind, in a Map made then.
      ours.set('x', 1).set('y', 2);
      expect(made).toBe(1);
    } finally {
      globalThis.Map = RealMap;
      globalThis.Set = RealSet;
    }
  });
});
