/**
 * The engine's read of a sandbox host's frames: its end of the host's stdout, read through
 * `onread` into one buffer of this module's, not through a readable stream's push.
 *
 * The host's stdout is a connected AF_UNIX socket pair made by this process (libuv makes every
 * `'pipe'` stdio that way on Linux: the host's fd 1 is `socket:[…]` at the base too), and
 * `child_process` wraps our end in a `net.Socket` whose stream pushed each read, emitted `'data'`
 * and queued a `maybeReadMore` tick, on every call frame of a binding call's path (~1 push and ~1
 * tick a call in the runner: test/bench/README.md, round 40 `call-floor`, round 41 `stdout-pair`).
 * Here that same socket is put in the mode `net.Socket({ onread })` sets up (what host-input.ts does
 * for the host's stdin and gateway-post.ts for the runner's socket to the gateway): its handle reads
 * into our buffer and calls us back with the byte count; the socket keeps everything else — its
 * EOF (`'end'`, then `'close'`, which `child_process` counts for the child's own `'close'`), its
 * errors, ref and unref. Nothing changes on the host's side: the same descriptor of the same kind,
 * written the same way.
 *
 * `child_process` has no `onread` option, and a second socket of our own on the same handle or
 * descriptor fights the first (round 40's "Tried"), so the mode is set on its socket by the two
 * fields Node's constructor fills from `onread` (found by their symbols' names) and the handle's
 * `useUserBuffer`, as the constructor does; in the same synchronous step as the spawn, before any
 * read can land. Where a Node lacks them (another release), the socket is read by `'data'` as before.
 */
import type { Readable } from 'node:stream';
import type { FrameReader } from './frame.ts';

/** One read's most bytes (libuv's own read size for a stream). */
const READ_BYTES = 64 * 1024;

/**
 * Shared by every host's read: a read's bytes are handed to that host's reader in its callback and
 * what the reader keeps (a frame not whole yet) is copied off before the callback returns, so the
 * next read, of any host, may fill it again.
 */
const buffer = Buffer.allocUnsafe(READ_BYTES);

/** A symbol of `socket`'s own, by its description (Node's net.js: `kBuffer`, `kBufferCb`). */
function symbolNamed(socket: object, name: string): symbol | undefined {
  const own = Object.getOwnPropertySymbols(socket);
  for (let i = 0; i < own.length; i++) if (own[i]!.description === name) return own[i];
  return undefined;
}

/**
 * Feeds `reader` with what the host writes on `stdout` (`child.stdout`). True when read through
 * `onread`, false when through `'data'` (no such mode in this Node, or not a socket).
 */
export function readHostFrames(stdout: Readable, reader: FrameReader): boolean {
  const socket = stdout as unknown as Record<symbol, unknown> & {
    _handle?: { useUserBuffer?: (buffer: Uint8Array) => void } | null;
  };
  const kBuffer = symbolNamed(socket, 'kBuffer');
  const kBufferCb = symbolNamed(socket, 'kBufferCb');
  const kBufferGen = symbolNamed(socket, 'kBufferGen');
  const handle = socket._handle;
  if (
    kBuffer === undefined ||
    kBufferCb === undefined ||
    (kBufferGen !== undefined && socket[kBufferGen] !== null && socket[kBufferGen] !== undefined) ||
    socket[kBuffer] !== null ||
    typeof handle?.useUserBuffer !== 'function'
  ) {
    stdout.on('data', (chunk: Buffer) => reader.push(chunk));
    return false;
  }
  socket[kBufferCb] = (bytes: number) => {
    reader.push(buffer.subarray(0, bytes));
    // A frame not whole yet stays in the reader: copied out of the buffer the next read fills.
    reader.ownCopies(buffer.buffer);
    // Go on reading (false would pause the socket).
    return true;
  };
  socket[kBuffer] = buffer;
  handle.useUserBuffer(buffer);
  return true;
}
