/**
 * base64url (no padding) of a sealed text's IV and tag, in JavaScript: each is 12 or 16 bytes, and
 * Node's `toString('base64url')` / `Buffer.from(…, 'base64url')` cost a native call and a Buffer
 * apiece for them (a seal encodes two, an open decodes two; test/bench/README.md, round 43
 * `seal-floor`). The ciphertext, of any length, stays with Node's codec.
 *
 * The decoder is strict where Node's is lenient: every character must be of the alphabet and the
 * last one's unused bits zero, so one IV or tag has one text. Node's encoder writes only such
 * texts, so every text a sealer wrote reads the same; a text no encoder writes is refused.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const CODES = new Uint8Array(64);
for (let i = 0; i < 64; i++) CODES[i] = ALPHABET.charCodeAt(i);
const VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) VALUES[ALPHABET.charCodeAt(i)] = i;

// One `String.fromCharCode` of all the characters: one string made, not one a concatenation (which
// cost more than Node's native call, counted).
const c0 = (n: number) => CODES[n >> 18]!;
const c1 = (n: number) => CODES[(n >> 12) & 63]!;
const c2 = (n: number) => CODES[(n >> 6) & 63]!;
const c3 = (n: number) => CODES[n & 63]!;
const triple = (b: Uint8Array, i: number) => (b[i]! << 16) | (b[i + 1]! << 8) | b[i + 2]!;

/** base64url of the 12 bytes at `b[s]` (an IV): 16 characters. */
export function encode12(b: Uint8Array, s: number): string {
  const n = triple(b, s);
  const o = triple(b, s + 3);
  const p = triple(b, s + 6);
  const q = triple(b, s + 9);
  return String.fromCharCode(
    c0(n),
    c1(n),
    c2(n),
    c3(n),
    c0(o),
    c1(o),
    c2(o),
    c3(o),
    c0(p),
    c1(p),
    c2(p),
    c3(p),
    c0(q),
    c1(q),
    c2(q),
    c3(q),
  );
}

/** base64url (no padding) of the 16 bytes at `b[s]` (a GCM tag): 22 characters. */
export function encode16(b: Uint8Array, s: number): string {
  const n = triple(b, s);
  const o = triple(b, s + 3);
  const p = triple(b, s + 6);
  const q = triple(b, s + 9);
  const r = triple(b, s + 12);
  const t = b[s + 15]!;
  return String.fromCharCode(
    c0(n),
    c1(n),
    c2(n),
    c3(n),
    c0(o),
    c1(o),
    c2(o),
    c3(o),
    c0(p),
    c1(p),
    c2(p),
    c3(p),
    c0(q),
    c1(q),
    c2(q),
    c3(q),
    c0(r),
    c1(r),
    c2(r),
    c3(r),
    CODES[t >> 2]!,
    CODES[(t & 3) << 4]!,
  );
}

const valueAt = (text: string, at: number): number => {
  const c = text.charCodeAt(at);
  return c < 128 ? VALUES[c]! : -1;
};

/**
 * Decodes `text[from, to)` (base64url, no padding) into `out` at `at`, exactly `bytes` bytes: false
 * unless the span is the one canonical text of that many bytes.
 */
export function decodeShort(
  text: string,
  from: number,
  to: number,
  out: Uint8Array,
  at: number,
  bytes: number,
): boolean {
  if (to - from !== Math.ceil((bytes * 4) / 3)) return false;
  let o = at;
  let i = from;
  for (; i + 4 <= to; i += 4) {
    const a = valueAt(text, i);
    const b = valueAt(text, i + 1);
    const c = valueAt(text, i + 2);
    const d = valueAt(text, i + 3);
    if ((a | b | c | d) < 0) return false;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >> 16;
    out[o++] = (n >> 8) & 255;
    out[o++] = n & 255;
  }
  const left = to - i;
  if (left === 2) {
    const a = valueAt(text, i);
    const b = valueAt(text, i + 1);
    if ((a | b) < 0 || (b & 15) !== 0) return false;
    out[o++] = (a << 2) | (b >> 4);
  } else if (left === 3) {
    const a = valueAt(text, i);
    const b = valueAt(text, i + 1);
    const c = valueAt(text, i + 2);
    if ((a | b | c) < 0 || (c & 3) !== 0) return false;
    const n = (a << 10) | (b << 4) | (c >> 2);
    out[o++] = n >> 8;
    out[o++] = n & 255;
  }
  return o - at === bytes;
}
