/**
 * Bench only: handed-decode.ts as rounds 30–34 had it (short strings built a character at a time),
 * the reference `handed-decode-cost.ts` times round 35's read against (`runner-js`).
 *
 * A hand-off key's member (`cmsgpack.pack({token, answer})`, handoff-scripts.ts) read in one pass
 * into what the runner reads of it: a Lua value as Redis would answer it (RESP drops what
 * cmsgpack keeps): nil and false are null, true is 1, a number its integer part (a 64-bit one a
 * BigInt, as msgpackr reads it), a table an array up to its first hole (a table cmsgpack wrote as a
 * map, its keys 1, 2, … up to the first nil or false). It reads only what cmsgpack writes (no
 * extension types), and stands in for msgpackr's general `unpack` and a second walk over its
 * result: on the pick-up's path, after the runner slept, each of those cost tens of µs cold
 * (test/bench/README.md, round 30, `pickup-runner`).
 */

const EMPTY = Buffer.alloc(0);
let buf: Buffer = EMPTY;
let pos = 0;

/** A value read raw, its Lua nil and false kept apart (an array ends at nil, a map's run at both). */
const NIL = Symbol('nil');
const FALSE = Symbol('false');
type Raw = unknown;

/** The value at `pos` as the runner reads it, or NIL / FALSE. */
function read(): Raw {
  const b = buf[pos++] as number;
  if (b < 0x80) return b;
  if (b >= 0xe0) return b - 0x100;
  if (b >= 0xa0 && b < 0xc0) return str(b & 0x1f);
  if (b >= 0x90 && b < 0xa0) return array(b & 0x0f);
  if (b < 0x90) return map(b & 0x0f);
  switch (b) {
    case 0xc0:
      return NIL;
    case 0xc2:
      return FALSE;
    case 0xc3:
      return 1;
    case 0xc4:
    case 0xd9:
      return str(u(1));
    case 0xc5:
    case 0xda:
      return str(u(2));
    case 0xc6:
    case 0xdb:
      return str(u(4));
    case 0xca:
      pos += 4;
      return Math.trunc(buf.readFloatBE(pos - 4));
    case 0xcb:
      pos += 8;
      return Math.trunc(buf.readDoubleBE(pos - 8));
    case 0xcc:
      return u(1);
    case 0xcd:
      return u(2);
    case 0xce:
      return u(4);
    case 0xcf:
      pos += 8;
      return buf.readBigUInt64BE(pos - 8);
    case 0xd0:
      pos += 1;
      return buf.readInt8(pos - 1);
    case 0xd1:
      pos += 2;
      return buf.readInt16BE(pos - 2);
    case 0xd2:
      pos += 4;
      return buf.readInt32BE(pos - 4);
    case 0xd3:
      pos += 8;
      return buf.readBigInt64BE(pos - 8);
    case 0xdc:
      return array(u(2));
    case 0xdd:
      return array(u(4));
    case 0xde:
      return map(u(2));
    case 0xdf:
      return map(u(4));
    default:
      throw new Error(`hand-off: msgpack type 0x${b.toString(16)} is not one cmsgpack writes`);
  }
}

/** An unsigned big-endian integer of `n` bytes at `pos`. */
function u(n: 1 | 2 | 4): number {
  pos += n;
  return n === 1 ? (buf[pos - 1] as number) : n === 2 ? buf.readUInt16BE(pos - 2) : buf.readUInt32BE(pos - 4);
}

/** A short ASCII string (most: ids, counts, field names) decoded in JavaScript, no native call. */
function str(n: number): string {
  const start = pos;
  pos += n;
  if (n > 32) return buf.toString('utf8', start, pos);
  let out = '';
  for (let i = start; i < pos; i++) {
    const c = buf[i] as number;
    if (c >= 0x80) return buf.toString('utf8', start, pos);
    out += String.fromCharCode(c);
  }
  return out;
}

/** Every element is read (the bytes after a hole still belong to the array); kept up to the first nil. */
function array(n: number): unknown[] {
  const out: unknown[] = [];
  let open = true;
  for (let i = 0; i < n; i++) {
    const v = read();
    if (v === NIL) open = false;
    else if (open) out.push(v === FALSE ? null : v);
  }
  return out;
}

/** A table with holes (or other keys): its values at keys 1, 2, … up to the first nil or false. */
function map(n: number): unknown[] {
  const byKey = new Map<string, Raw>();
  for (let i = 0; i < n; i++) {
    const k = read();
    byKey.set(String(k), read());
  }
  const out: unknown[] = [];
  for (let i = 1; ; i++) {
    const v = byKey.get(String(i));
    if (v === undefined || v === NIL || v === FALSE) return out;
    out.push(v);
  }
}

/** A top-level value as the runner reads it (a nil or false one: null). */
export function decodeLuaValue(member: Buffer): unknown {
  buf = member;
  pos = 0;
  try {
    const v = read();
    return v === NIL || v === FALSE ? null : v;
  } finally {
    buf = EMPTY;
  }
}
