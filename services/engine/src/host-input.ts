/**
 * The sandbox host's frames from the engine, on stdin (fd 0: the engine's end of a socket pair),
 * read through `onread`: each read is handed to the frame reader as it is read, into one buffer of
 * this module's, not through a stream's buffer, 'data' event and ticks. On a call's path that was
 * a readable stream's push, its event, its `maybeReadMore` tick and the tick the reader was
 * deferred to, every outcome frame (test/bench/README.md, round 40 `call-floor`). The turn an
 * outcome starts runs from here, under as few frames as it did from the tick queue (`onStreamRead`,
 * the callback: what isolated-vm's dispose error captures, frame.ts `readFramesInTicks`).
 * Where fd 0 is not a socket or pipe Node can read this way, stdin's stream is read as before.
 */
import type { Socket } from 'node:net';
import { type FrameReader, readFramesInTicks } from './frame.ts';

/** By `getBuiltinModule`: an `import` of a builtin makes its ES module facade (host.ts). */
const net = process.getBuiltinModule('node:net');

/** One read's most bytes (libuv's own read size for a stream). */
const READ_BYTES = 64 * 1024;

/** Feeds `reader` with what arrives on stdin; `onEnd` when the engine closes it. */
export function readStdinFrames(reader: FrameReader, onEnd: () => void): void {
  const buffer = Buffer.allocUnsafe(READ_BYTES);
  let input: Socket;
  try {
    input = new net.Socket({
      fd: 0,
      readable: true,
      writable: false,
      onread: {
        buffer,
        callback: (bytes: number) => {
          reader.push(buffer.subarray(0, bytes));
          // A frame not whole yet stays in the reader: copied out of the buffer the next read fills.
          reader.ownCopies(buffer.buffer);
          // Go on reading (false would pause the socket).
          return true;
        },
      },
    });
  } catch {
    readFramesInTicks(process.stdin, reader);
    process.stdin.on('end', onEnd);
    return;
  }
  input.on('end', onEnd);
}
