/**
 * `BoundedMap`: a cache's map that holds at most `max` entries and forgets its oldest in O(1).
 *
 * Why not one Map that deletes its first key (a new `keys()` iterator's) at the bound: V8 deletes by
 * leaving a hole in its insertion-ordered table, compacted only when the table fills, and a new
 * iterator steps over every hole at the front. Once such a Map stays full, every insert walked
 * hundreds (1,000 entries) to thousands (10,000) of holes: ~1 µs and ~12 µs an insert, hot
 * (test/bench/README.md, round 28 `gw-path` and round 29 `gw-cpu`).
 *
 * Two generations of `max / 2` entries instead: entries go into the newer; when it is full, it
 * becomes the older and the older is dropped whole. So the last `max / 2` entries set at least
 * are held, never more than `max`, and no iterator is made. Reads look in the newer, then the
 * older; a read does not move an entry (as the single Map's insertion order did not).
 */
export class BoundedMap<K, V> {
  private newer = new Map<K, V>();
  private older = new Map<K, V>();
  private readonly generation: number;

  /** `max`: the most entries held (at least 2); at least the last `max / 2` set are kept. */
  constructor(max: number) {
    this.generation = Math.max(1, Math.floor(max / 2));
  }

  get(key: K): V | undefined {
    const v = this.newer.get(key);
    return v !== undefined || this.newer.has(key) ? v : this.older.get(key);
  }

  has(key: K): boolean {
    return this.newer.has(key) || this.older.has(key);
  }

  set(key: K, value: V): this {
    if (this.newer.size >= this.generation && !this.newer.has(key)) {
      this.older = this.newer;
      this.newer = new Map();
    }
    this.newer.set(key, value);
    // The older's copy would come back if this one is deleted; and it is counted in `size`.
    this.older.delete(key);
    return this;
  }

  delete(key: K): boolean {
    const a = this.newer.delete(key);
    const b = this.older.delete(key);
    return a || b;
  }

  clear(): void {
    this.newer.clear();
    this.older.clear();
  }

  get size(): number {
    return this.newer.size + this.older.size;
  }

  /** Every key held, newer generation first (a walk: for rare sweeps, not a request's path). */
  *keys(): IterableIterator<K> {
    yield* this.newer.keys();
    yield* this.older.keys();
  }
}
