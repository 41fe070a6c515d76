/**
 * A sealer that remembers the plaintext of what it sealed lately, so opening one of those
 * ciphertexts again needs no decryption. A submit seals its run's program, description and request,
 * and the same gateway opens them again moments later from the run's pushed end (`Prefer: wait`,
 * an MCP run) to answer the submit: three decryptions per run that give back text it just had.
 * A binding call's events do not come through here (create-deps.ts gives the run store the plain
 * sealer for them): one a call, never opened on a run's path, they would push the submits out.
 *
 * Exact: a ciphertext is only ever produced by its own seal (a fresh IV each time) and opens to
 * exactly the text sealed, so the remembered text is what decryption would return. Anything else
 * (sealed by another process, or forgotten) is opened by the wrapped sealer, which also does every
 * seal. Bounded by entries and by characters held; the oldest are forgotten first, and values
 * larger than `maxValueChars` are not remembered at all.
 */
import type { Sealer } from '@islet/core';

interface OwnSealMemoOptions {
  maxEntries?: number;
  /** Characters held (ciphertexts and plaintexts together). */
  maxChars?: number;
  /** Plaintexts longer than this are sealed without being remembered. */
  maxValueChars?: number;
}

export interface OwnSealMemo extends Sealer {
  /** Opens answered from memory (what a test asserts; the wrapped sealer's opens are the rest). */
  readonly hits: number;
}

export function memoizeOwnSeals(sealer: Sealer, options: OwnSealMemoOptions = {}): OwnSealMemo {
  const maxEntries = options.maxEntries ?? 1024;
  const maxChars = options.maxChars ?? 4 * 1024 * 1024;
  const maxValueChars = options.maxValueChars ?? 64 * 1024;
  const plainOf = new Map<string, string>();
  // The keys in the order sealed, oldest at `head`: a Map's own first key (`keys().next()`) is found
  // by stepping over the holes its deletes left at the front, hundreds once the memo is full
  // (~0.5–1 µs a seal; test/bench/README.md, round 29 `gw-cpu`). Entries leave only from here.
  let order: string[] = [];
  let head = 0;
  let chars = 0;
  let hits = 0;
  const forgetOldest = () => {
    const oldest = order[head];
    if (oldest === undefined) return;
    order[head++] = '';
    // Drop the forgotten front now and then, so the array stays within twice what it holds.
    if (head > 1024 && head * 2 > order.length) {
      order = order.slice(head);
      head = 0;
    }
    chars -= oldest.length + (plainOf.get(oldest)?.length ?? 0);
    plainOf.delete(oldest);
  };
  return {
    seal(plaintext) {
      const sealed = sealer.seal(plaintext);
      if (plaintext.length <= maxValueChars) {
        if (plainOf.has(sealed)) chars -= sealed.length + (plainOf.get(sealed)?.length ?? 0);
        else order.push(sealed);
        plainOf.set(sealed, plaintext);
        chars += sealed.length + plaintext.length;
        while (plainOf.size > maxEntries || chars > maxChars) forgetOldest();
      }
      return sealed;
    },
    open(sealed) {
      const plain = plainOf.get(sealed);
      if (plain === undefined) return sealer.open(sealed);
      hits++;
      return plain;
    },
    get hits() {
      return hits;
    },
  };
}
