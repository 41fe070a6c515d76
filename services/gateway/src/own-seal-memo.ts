/**
 * A sealer that remembers the plaintext of what it sealed lately, so opening one of those
 * ciphertexts again needs no decryption. A submit seals its run's program, description and request,
 * and the same gateway opens them again moments later from the run's pushed end (`Prefer: wait`,
 * an MCP run) to answer the submit: three decryptions per run that give back text it just had.
 * A binding call's events do not come through here (create-deps.ts gives the run store the plain
 * sealer for them): one a call, never opened on a run's path, they would push the submits out.
 *
 * Exact: a ciphertext is only ever produced by its own seal (a fresh IV each time) and opens to
 * exactly the text sealed, so the remembered text is what decryption would return — for a text
 * that is well-formed UTF-16 only: a seal encodes UTF-8, which turns a lone surrogate (a request's
 * JSON may carry one, `"\ud800"`) into U+FFFD, so such a text opens to another one and is not
 * remembered (a waited answer showed the request's text where a read of the run shows the
 * stored one; test/bench/README.md, round 37 `end-open`). Anything else
 * (sealed by another process, or forgotten) is opened by the wrapped sealer, which also does every
 * seal. Bounded by entries and by characters held; the oldest are forgotten first (half the
 * bounds at a time), and values larger than `maxValueChars` are not remembered at all.
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

/**
 * A bound text's entry names its bind too, so the memo answers only where the sealer would: the
 * text copied to another run's record or field is opened by the sealer, and fails there. A sealed
 * text has no NUL, so the key is one text's and one bind's alone.
 */
const memoKey = (sealed: string, bind: string): string => `${sealed}\0${bind}`;

export function memoizeOwnSeals(sealer: Sealer, options: OwnSealMemoOptions = {}): OwnSealMemo {
  const maxEntries = options.maxEntries ?? 2048;
  const maxChars = options.maxChars ?? 4 * 1024 * 1024;
  const maxValueChars = options.maxValueChars ?? 64 * 1024;
  // Two generations, each up to half the bounds: a full young one becomes the old one and the old
  // one is dropped whole. Forgetting one oldest entry a seal (the first key of one Map) cost a walk
  // over the deleted entries V8 keeps at a Map's front until it rehashes: ~2 µs a seal at 1024
  // entries, ~8 at 4096 (test/bench/README.md, round 29 `par-calls`; the event hub's round 28 fix).
  const half = { entries: Math.max(1, Math.floor(maxEntries / 2)), chars: maxChars / 2 };
  let young = new Map<string, string>();
  let old = new Map<string, string>();
  let youngChars = 0;
  let hits = 0;
  return {
    seal(plaintext, bind) {
      const sealed = sealer.seal(plaintext, bind);
      // `isWellFormed`: true without a scan for a one-byte string (no surrogates), as most are.
      if (plaintext.length <= maxValueChars && plaintext.isWellFormed()) {
        const chars = sealed.length + plaintext.length;
        if (young.size > 0 && (young.size >= half.entries || youngChars + chars > half.chars)) {
          old = young;
          young = new Map();
          youngChars = 0;
        }
        if (chars <= half.chars) {
          young.set(bind === undefined ? sealed : memoKey(sealed, bind), plaintext);
          youngChars += chars;
        }
      }
      return sealed;
    },
    open(sealed, bind) {
      const key = bind === undefined ? sealed : memoKey(sealed, bind);
      const plain = young.get(key) ?? old.get(key);
      if (plain === undefined) return sealer.open(sealed, bind);
      hits++;
      return plain;
    },
    get hits() {
      return hits;
    },
  };
}
