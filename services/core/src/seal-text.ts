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
const CHARS = Array.from(ALPHABET);
const VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) VALUES[ALPHABET.charCodeAt(i)] = i;

/** base64url of `bytes[start, start + length)`, no padding. */
export function encodeShort(bytes: Uint8Array, start: number, length: number): string {
  let text = '';
  const end = start + length;
  let i = start;
  for (; i + 3 <= end; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    text += CHARS[n >> 18]! + CHARS[(n >> 12) & 63]! + CHARS[(n >> 6) & 63]! + CHARS[n & 63]!;
  }
  if (end - i === 1) {
    const n = bytes[i]!;
    text += CHARS[n >> 2]! + CHARS[(n & 3) << 4]!;
  } else if (end - i === 2) {
    const n = (bytes[i]! << 8) | bytes[i + 1]!;
    text += CHARS[n >> 10]! + CHARS[(n >> 4) & 63]! + CHARS[(n & 15) << 2]!;
  }
  return text;
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
