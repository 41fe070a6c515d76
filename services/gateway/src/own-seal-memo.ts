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
 * What a seal remembers: the ciphertext and its bind (compared whole at an open, so the memo
 * answers only where the sealer would: the text copied to another run's record or field, or
 * changed anywhere, is opened by the sealer, and fails there) and the plaintext.
 */
interface Remembered {
  sealed: string;
  bind: string | undefined;
  plain: string;
}

/**
 * An entry's key: the ciphertext's last characters, the end of its authentication tag and of its
 * ciphertext (`v1.<kid>.<iv>.<tag>.<ct>`, base64url), which a fresh IV each seal makes random: a
 * 24-character key is hashed where the whole text (a submit's `pick` ~1.2 KB, its bind appended:
 * a concatenation V8 flattened, copying it, before hashing every character) was, at every seal and
 * every open (test/bench/README.md, round 50 `gateway-submit`). Two texts that share it (never
 * seen: 144 random bits) only cost a decryption: the newer entry replaces the older, and an open
 * compares the whole text.
 */
const KEY_CHARS = 24;
const keyOf = (sealed: string): string => sealed.slice(-KEY_CHARS);

export function memoizeOwnSeals(sealer: Sealer, options: OwnSealMemoOptions = {}): OwnSealMemo {
  const maxEntries = options.maxEntries ?? 2048;
  const maxChars = options.maxChars ?? 4 * 1024 * 1024;
  const maxValueChars = options.maxValueChars ?? 64 * 1024;
  // Two generations, each up to half the bounds: a full young one becomes the old one and the old
  // one is dropped whole. Forgetting one oldest entry a seal (the first key of one Map) cost a walk
  // over the deleted entries V8 keeps at a Map's front until it rehashes: ~2 µs a seal at 1024
  // entries, ~8 at 4096 (test/bench/README.md, round 29 `par-calls`; the event hub's round 28 fix).
  const half = { entries: Math.max(1, Math.floor(maxEntries / 2)), chars: maxChars / 2 };
  let young = new Map<string, Remembered>();
  let old = new Map<string, Remembered>();
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
          young.set(keyOf(sealed), { sealed, bind, plain: plaintext });
          youngChars += chars;
        }
      }
      return sealed;
    },
    open(sealed, bind) {
      const key = keyOf(sealed);
      const known = young.get(key) ?? old.get(key);
      if (known === undefined || known.sealed !== sealed || known.bind !== bind)
        return sealer.open(sealed, bind);
      hits++;
      return known.plain;
    },
    get hits() {
      return hits;
    },
  };
}
