/**
 * A `Map` with one entry held in fields in front of it: for the runner's maps that go from one
 * entry to none every run (by token, job id or run id), which a `Map` pays for each time.
 *
 * V8 shrinks a `Map`'s table when a delete leaves it under a quarter full, and at its smallest it
 * still makes a new one: a map going from one entry to none allocates a table (~100–250 B) and
 * calls into the runtime every run. About ten of the runner's do so at one client
 * (test/bench/README.md, round 39 `abort-once`, round 40 `runner-alloc`). Here the first entry of an
 * empty map lives in three fields; the `Map` behind them is made only when a second entry comes.
 *
 * The same as a `Map` for what the runner does with them: `get`/`has`/`set`/`delete`/`size`/
 * `clear`, and iteration in insertion order (the entry in front is older than all behind it: it is
 * taken only when the map behind is empty). Keys compare as a `Map`'s (SameValueZero). While an
 * iteration is under way (a heartbeat's loop over leases awaits inside it), an entry added goes
 * behind, where the iteration still visits it, as a `Map`'s does.
 */

/**
 * SameValueZero: a `Map`'s key equality (NaN equals NaN; +0 equals -0). NaN is the one value not
 * equal to itself, so no `Number.isNaN` call for two keys that differ (every miss of the front
 * entry, several a run: round 52 `runner-own`).
 */
// biome-ignore lint/suspicious/noSelfCompare: NaN is the one value not equal to itself.
const same = (a: unknown, b: unknown): boolean => a === b || (a !== a && b !== b);

export class OneSlotMap<K, V> {
  private held = false;
  private oneKey: K | undefined;
  private oneValue: V | undefined;
  /** Entries behind the one in front, made at the first second entry and kept. */
  private rest: Map<K, V> | undefined;
  /** Iterations under way: while any is, the front is not taken (an entry added there is visited). */
  private iterating = 0;

  /** The map behind the front, made when first needed and kept. */
  private behind(): Map<K, V> {
    if (this.rest === undefined) this.rest = new Map();
    return this.rest;
  }

  get size(): number {
    return (this.held ? 1 : 0) + (this.rest === undefined ? 0 : this.rest.size);
  }

  has(key: K): boolean {
    if (this.held && same(this.oneKey, key)) return true;
    return this.rest?.has(key) ?? false;
  }

  get(key: K): V | undefined {
    if (this.held && same(this.oneKey, key)) return this.oneValue;
    return this.rest?.get(key);
  }

  set(key: K, value: V): this {
    if (this.held) {
      if (same(this.oneKey, key)) this.oneValue = value;
      else this.behind().set(key, value);
    } else if (this.iterating === 0 && (this.rest === undefined || this.rest.size === 0)) {
      this.held = true;
      this.oneKey = key;
      this.oneValue = value;
    } else this.behind().set(key, value);
    return this;
  }

  delete(key: K): boolean {
    if (this.held && same(this.oneKey, key)) {
      this.held = false;
      this.oneKey = undefined;
      this.oneValue = undefined;
      return true;
    }
    return this.rest?.delete(key) ?? false;
  }

  clear(): void {
    this.held = false;
    this.oneKey = undefined;
    this.oneValue = undefined;
    this.rest?.clear();
  }

  /** Each entry, oldest first; deleting during it is safe, as with a `Map`. */
  forEach(fn: (value: V, key: K) => void): void {
    this.iterating++;
    try {
      if (this.held) fn(this.oneValue as V, this.oneKey as K);
      this.behind().forEach(fn);
    } finally {
      this.iterating--;
    }
  }

  *entries(): Generator<[K, V], void, undefined> {
    this.iterating++;
    try {
      if (this.held) yield [this.oneKey as K, this.oneValue as V];
      yield* this.behind().entries();
    } finally {
      this.iterating--;
    }
  }

  *keys(): Generator<K, void, undefined> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): Generator<V, void, undefined> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): Generator<[K, V], void, undefined> {
    return this.entries();
  }
}
