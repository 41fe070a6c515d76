/**
 * A key's Redis Cluster hash slot, computed without making anything.
 *
 * An ioredis `Cluster` routes each command by `Command.getSlot()`: the command's first key through
 * cluster-key-slot's `generate`, which first copies the key into an array of its UTF-8 bytes (a
 * JavaScript array a key, grown element by element) and then runs CRC16 over it. That array was
 * 6.5–6.7 KB a run of the runner's allocations on a 3-master Cluster and 3.0–3.1 KB of the
 * gateway's (test/bench/README.md round 49 `cluster-text`, "Found, left" 1), for every command,
 * Islet's and BullMQ's: what a Cluster path allocates that a one-server path does not.
 *
 * `keySlot` runs the same state machine over the same bytes, each byte fed to the CRC as it is
 * decoded from the string: the same slot for every key (including cluster-key-slot's own readings
 * of an empty tag `{}` followed by a later `}`, and of a lone surrogate as three bytes), so a command
 * goes to the node it went to before. `useKeySlot` puts it behind `Command.prototype.getSlot`, once
 * a process, when it makes its first Cluster client (redis.ts): a one-server process is untouched.
 * ioredis's `Pipeline` (MULTI) computes its slots with cluster-key-slot directly and keeps doing so.
 */
import { Command } from 'ioredis';
// A static import (not a require.resolve at run time): a bundled runner has no node_modules to look in.
import ioredisPackage from 'ioredis/package.json' with { type: 'json' };

/**
 * The ioredis version whose `Command.prototype.getSlot` (its `slot` memo, its `getKeys()[0]`) this
 * restates. With another version `useKeySlot` leaves ioredis's own in place (an upgrade re-reads
 * `getSlot` and moves this constant: the upgrade checklist's line, as pop-wait.ts's for BullMQ).
 */
export const GET_SLOT_IOREDIS_VERSION = '5.11.1';

/** The installed ioredis's version. */
const ioredisVersion: string = ioredisPackage.version;

/** CRC16-CCITT (XMODEM, polynomial 0x1021), the table cluster-key-slot and Redis use. */
const CRC16 = new Uint16Array(256);
for (let n = 0; n < 256; n++) {
  let crc = n << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  CRC16[n] = crc;
}

/** `crc` with one more byte (kept to 16 bits: cluster-key-slot's wider value has the same low 16). */
const crcOf = (crc: number, byte: number): number =>
  ((CRC16[(byte ^ (crc >> 8)) & 0xff] as number) ^ (crc << 8)) & 0xffff;

/** The slot of a key given as bytes (a Buffer), as cluster-key-slot's `generate` reads them. */
function bytesSlot(bytes: ArrayLike<number>): number {
  let start = -1;
  let whole = 0;
  let tag = 0;
  for (let i = 0; i < bytes.length; ) {
    const byte = bytes[i++] as number;
    if (start === -1) {
      if (byte === 0x7b) start = i;
    } else if (byte !== 0x7d) tag = crcOf(tag, byte);
    else if (i - 1 !== start) return tag & 0x3fff;
    whole = crcOf(whole, byte);
  }
  return whole & 0x3fff;
}

/**
 * The Redis Cluster hash slot of `key` — cluster-key-slot's `generate(key)`, with no array made.
 * The hash tag (the bytes between the first `{` and the next `}`) is found while hashing: `{` and
 * `}` are ASCII, and no byte of a character's multi-byte UTF-8 form is below 0x80, so only the
 * characters under 128 move the tag's state; the others feed their bytes to both CRCs.
 */
export function keySlot(key: string | Buffer): number {
  if (typeof key !== 'string') return bytesSlot(key ?? []);
  let at = 0; // bytes read so far
  let start = -1; // bytes read when the first `{` was
  let whole = 0;
  let tag = 0;
  const length = key.length;
  for (let i = 0; i < length; i++) {
    let char = key.charCodeAt(i);
    if (char < 128) {
      at++;
      if (start === -1) {
        if (char === 0x7b) start = at;
      } else if (char !== 0x7d) tag = crcOf(tag, char);
      else if (at - 1 !== start) return tag & 0x3fff;
      whole = crcOf(whole, char);
      continue;
    }
    // A character of 2 to 4 UTF-8 bytes, as cluster-key-slot's `toUTF8Array` writes it (a lone
    // surrogate as 3 bytes).
    let b0: number;
    let b1: number;
    let b2 = -1;
    let b3 = -1;
    if (char < 2048) {
      b0 = (char >> 6) | 192;
      b1 = (char & 63) | 128;
    } else if ((char & 0xfc00) === 0xd800 && i + 1 < length && (key.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      char = 0x10000 + ((char & 0x03ff) << 10) + (key.charCodeAt(++i) & 0x03ff);
      b0 = (char >> 18) | 240;
      b1 = ((char >> 12) & 63) | 128;
      b2 = ((char >> 6) & 63) | 128;
      b3 = (char & 63) | 128;
    } else {
      b0 = (char >> 12) | 224;
      b1 = ((char >> 6) & 63) | 128;
      b2 = (char & 63) | 128;
    }
    at += b3 !== -1 ? 4 : b2 !== -1 ? 3 : 2;
    if (start !== -1) {
      tag = crcOf(crcOf(tag, b0), b1);
      if (b2 !== -1) tag = crcOf(tag, b2);
      if (b3 !== -1) tag = crcOf(tag, b3);
    }
    whole = crcOf(crcOf(whole, b0), b1);
    if (b2 !== -1) whole = crcOf(whole, b2);
    if (b3 !== -1) whole = crcOf(whole, b3);
  }
  return whole & 0x3fff;
}

/** The fields of ioredis's `Command` that `getSlot` reads and sets. */
interface SlotState {
  slot?: number | null;
  keys?: unknown;
  name: string;
  args: unknown[];
  getKeys(): (string | Buffer)[];
}

/**
 * ioredis's `Command.prototype.getSlot` (its memo, its first key), the slot by `keySlot`. A script
 * call (EVALSHA or EVAL, lower case as ioredis's `Script` and BullMQ's commands name it) whose keys
 * ioredis has not walked yet reads its first key where the command puts it, after the hash (or
 * text) and the key count — what `@ioredis/commands`' `getKeyIndexes` says for both — without
 * `getKeys` (its key-index array and the command's keys array: ~0.5 KB a run of the runner's
 * allocations on a Cluster for BullMQ's scripts, test/bench/README.md round 51 `cluster-path`,
 * "Found, left" 2). A command with a key prefix had its keys walked by ioredis's constructor
 * (`keys` set, the prefixed ones): that and any other command keep the `getKeys` reading. Nothing
 * else of a Cluster's path reads a script call's `keys` (ioredis 5.11.1: only sharded pub/sub's).
 */
function getSlot(this: SlotState): number | null {
  if (this.slot === undefined) {
    const name = this.name;
    if (this.keys === undefined && (name === 'evalsha' || name === 'eval')) {
      const args = this.args;
      const key = Number(args[1]) > 0 ? (args[2] as string | Buffer | null | undefined) : undefined;
      this.slot = key === null || key === undefined ? null : keySlot(key);
      return this.slot;
    }
    const key = this.getKeys()[0];
    this.slot = key === null || key === undefined ? null : keySlot(key);
  }
  return this.slot;
}

let used = false;

/**
 * Puts `keySlot` behind every ioredis command's `getSlot` in this process (once; idempotent), only
 * with the ioredis version it was written against (`GET_SLOT_IOREDIS_VERSION`).
 */
export function useKeySlot(version: string = ioredisVersion): void {
  if (used || version !== GET_SLOT_IOREDIS_VERSION) return;
  used = true;
  (Command.prototype as unknown as { getSlot: typeof getSlot }).getSlot = getSlot;
}

/** Whether `useKeySlot` has run in this process (tests). */
export function keySlotInUse(): boolean {
  return (Command.prototype as unknown as { getSlot: unknown }).getSlot === getSlot;
}
