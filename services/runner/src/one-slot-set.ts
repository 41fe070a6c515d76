/**
 * A `Set` with one member held in fields in front of it: for the runner's sets that go from one
 * member to none every run (tokens), which a `Set` pays for each time by making its table again
 * (see one-slot-map.ts, the same for maps; test/bench/README.md, round 40 `runner-alloc`).
 *
 * The same as a `Set` for `add`/`has`/`delete`/`size`/`clear` and iteration in insertion order
 * (the member in front is older than all behind it). While an iteration is under way, a member
 * added goes behind, where the iteration still visits it, as a `Set`'s does.
 */

/** SameValueZero: a `Set`'s equality (NaN equals NaN; +0 equals -0). */
// SameValueZero without a call: NaN is the one value not equal to itself (one-slot-map.ts).
// biome-ignore lint/suspicious/noSelfCompare: NaN is the one value not equal to itself.
const same = (a: unknown, b: unknown): boolean => a === b || (a !== a && b !== b);

export class OneSlotSet<T> {
  private held = false;
  private one: T | undefined;
  /** Members behind the one in front, made at the first second member and kept. */
  private rest: Set<T> | undefined;
  /** Iterations under way: while any is, the front is not taken (a member added there is visited). */
  private iterating = 0;

  /** The set behind the front, made when first needed and kept. */
  private behind(): Set<T> {
    if (this.rest === undefined) this.rest = new Set();
    return this.rest;
  }

  get size(): number {
    return (this.held ? 1 : 0) + (this.rest === undefined ? 0 : this.rest.size);
  }

  has(value: T): boolean {
    if (this.held && same(this.one, value)) return true;
    return this.rest?.has(value) ?? false;
  }

  add(value: T): this {
    if (this.held) {
      if (!same(this.one, value)) this.behind().add(value);
    } else if (this.iterating === 0 && (this.rest === undefined || this.rest.size === 0)) {
      this.held = true;
      this.one = value;
    } else this.behind().add(value);
    return this;
  }

  delete(value: T): boolean {
    if (this.held && same(this.one, value)) {
      this.held = false;
      this.one = undefined;
      return true;
    }
    return this.rest?.delete(value) ?? false;
  }

  clear(): void {
    this.held = false;
    this.one = undefined;
    this.rest?.clear();
  }

  *values(): Generator<T, void, undefined> {
    this.iterating++;
    try {
      if (this.held) yield this.one as T;
      yield* this.behind().values();
    } finally {
      this.iterating--;
    }
  }

  [Symbol.iterator](): Generator<T, void, undefined> {
    return this.values();
  }
}
