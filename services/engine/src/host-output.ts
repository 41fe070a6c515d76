/**
 * The sandbox host's frames to the engine, on stdout (a non-blocking socket pair: written straight
 * while it has room, the rest through stdout's stream). Only frames may reach stdout: host.ts sends
 * console output to stderr.
 */
import { encodeMessage } from './frame.ts';
import type { FromHost } from './wire.ts';

/** By `getBuiltinModule`: an `import` of node:fs makes its ES module facade, which loads fs/promises (host.ts). */
const fs = process.getBuiltinModule('node:fs');

// Call frames of the isolate's current turn, not yet written: a frame per write let the runner
// read a burst of calls (a Promise.all) in pieces and send them as several requests. Calls go out
// when the turn ends (the first turn returns, a delivery's task settles: see HostRun), any other
// frame takes them along first (order kept), and a delivery turn that never ends (a busy loop
// after a call) still sends them after FLUSH_FALLBACK_MS. The first turn holds this thread: its
// calls wait for it to return (or for a line it prints).
const FLUSH_FALLBACK_MS = 10;
let unsent: Buffer[] = [];
let fallback: NodeJS.Timeout | undefined;

export function flush(): void {
  if (fallback !== undefined) {
    clearTimeout(fallback);
    fallback = undefined;
  }
  if (unsent.length === 0) return;
  const out = unsent.length === 1 ? unsent[0]! : Buffer.concat(unsent);
  unsent = [];
  write(out);
}

/**
 * Straight to the pipe when nothing waits in stdout's stream queue (the common case: a frame or a
 * turn's frames fit the pipe): one write(2), none of the stream's JavaScript. Whatever the pipe
 * does not take now (full: EAGAIN, or a part) goes through the stream, as does any write while
 * something queued there is unwritten, so the order of bytes is kept.
 */
function write(out: Buffer): void {
  if (process.stdout.writableLength === 0) {
    let written = 0;
    try {
      written = fs.writeSync(1, out);
    } catch {
      // EAGAIN (the pipe is full) or anything else: the stream writes it, or reports it, as before.
    }
    if (written === out.length) return;
    out = out.subarray(written);
  }
  process.stdout.write(out);
}

/**
 * `gather`: a call, written with the rest of its turn (see `unsent`). `'turn'`: the same, in a turn
 * on this thread, which the caller flushes when the turn returns: no fallback timer, since none could
 * fire before that (the thread is in the turn), and making and clearing one was a timer on every
 * call's path (README round 30, call-lone).
 */
export function send(message: FromHost, gather: boolean | 'turn' = false): void {
  for (const buf of encodeMessage(message)) unsent.push(buf);
  if (gather === true) fallback ??= setTimeout(flush, FLUSH_FALLBACK_MS);
  else if (gather === false) flush();
}
