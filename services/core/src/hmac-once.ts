/**
 * HMAC-SHA256 (RFC 2104) of one message in two one-shot `hash` calls over a key prepared once:
 * `SHA256((K ^ opad) || SHA256((K ^ ipad) || message))`, the digest `createHmac` gives for the
 * same key and bytes (the tests compare the two over keys shorter than, as long as and longer
 * than SHA-256's 64-byte block, and over text that is not well-formed UTF-16).
 *
 * Why not `createHmac`: a gateway makes two HMACs a binding call (the journal's argument HMAC,
 * the App request's Standard Webhooks signature), a hundred-call run's batch two hundred on its
 * one thread, and each `createHmac` builds an `Hmac` object (a stream, a native context, the key
 * imported into it) for one `update` and one `digest` (test/bench/README.md, round 42 `par-cpu`).
 * The message is taken as two texts (`head`, `body`) written one after the other, so a caller's
 * `${prefix}${body}` is never made (and copied) as one string first.
 */
import { hash } from 'node:crypto';

const BLOCK = 64;
const DIGEST = 32;

/**
 * A key's two padded blocks, made once. `outer` has room for the inner digest after its block:
 * the second hash's input is written there, in place (one thread uses a key at a time, and a
 * `hash` reads its input before it returns).
 */
export interface HmacSha256Key {
  readonly inner: Buffer;
  readonly outer: Buffer;
}

export function hmacSha256Key(key: string | Buffer): HmacSha256Key {
  let k = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  // RFC 2104: a key longer than the block is hashed first; a shorter one is padded with zeros.
  if (k.length > BLOCK) k = hash('sha256', k, 'buffer');
  const inner = Buffer.alloc(BLOCK, 0x36);
  const outer = Buffer.alloc(BLOCK + DIGEST, 0x5c);
  for (let i = 0; i < k.length; i++) {
    inner[i] = 0x36 ^ (k[i] as number);
    outer[i] = 0x5c ^ (k[i] as number);
  }
  return { inner, outer };
}

/**
 * Where a message's first hash input is written, kept for the next one (`hash` reads it before it
 * returns) and cleared after each; a message too long for it gets a buffer of its own, so a large
 * one is not kept.
 */
const SCRATCH_BYTES = 16 * 1024;
let scratch: Buffer | undefined;

/**
 * The HMAC of `head` then `body` (their UTF-8, as `createHmac().update(head + body)` takes it).
 * Each text is encoded on its own: a `head` ending in half a surrogate pair would encode apart
 * from the other half in `body`; the callers' heads end in an ASCII separator. The inner digest
 * comes back as `binary` (latin1) text, one byte a character, and is written into the outer block's buffer:
 * a digest returned as a Buffer is a new native buffer each time, the dearest part of the call.
 */
export function hmacSha256(
  key: HmacSha256Key,
  head: string,
  body: string,
  encoding: 'base64' | 'base64url' | 'hex',
): string {
  const headBytes = Buffer.byteLength(head, 'utf8');
  const bodyBytes = Buffer.byteLength(body, 'utf8');
  const size = BLOCK + headBytes + bodyBytes;
  let first: Buffer;
  if (size <= SCRATCH_BYTES) {
    scratch ??= Buffer.allocUnsafeSlow(SCRATCH_BYTES);
    first = scratch;
  } else first = Buffer.allocUnsafe(size);
  key.inner.copy(first, 0);
  first.write(head, BLOCK, headBytes, 'utf8');
  first.write(body, BLOCK + headBytes, bodyBytes, 'utf8');
  const innerDigest = hash('sha256', first.length === size ? first : first.subarray(0, size), 'binary');
  // Nothing of a message (an App request's body, a call's arguments) outlives its hash in the kept buffer.
  if (first === scratch) first.fill(0, 0, size);
  key.outer.write(innerDigest, BLOCK, DIGEST, 'latin1');
  return hash('sha256', key.outer, encoding);
}
