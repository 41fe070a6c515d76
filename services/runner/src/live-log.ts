/**
 * A run's log lines on its event stream while it runs (`log` events), so the console and SSE
 * clients see output as it is printed rather than only in the end record. Bounded and batched:
 * lines gather for `flushMs` (or until `batchBytes`) and go out as one event; past `maxBytes` for
 * the run nothing more is sent but one last event saying `truncated` (the end record still has
 * every line the output cap kept). Appends go one after another, so events keep print order, and
 * `close` sends what is left before the run's end is written, so `log` events precede `end`. A run
 * that ends before its first batch went out sends none: its end record carries its output, and a
 * short run costs no Redis write more.
 */
import type { LogLineRecord as LogLine } from '@islet/protocol';

interface LiveLogOptions {
  /** Bytes of log text (UTF-8) sent live per run at most. */
  maxBytes: number;
  /** How long lines gather before they are sent, ms. */
  flushMs: number;
  /** Lines are sent at once when this many bytes have gathered. */
  batchBytes: number;
  /** Appends one `log` event to the run's stream. */
  append: (data: { lines: LogLine[]; truncated?: boolean }) => Promise<unknown>;
  onError?: (err: unknown) => void;
}

interface LiveLog {
  push(lines: LogLine[]): void;
  /** Sends what is left (nothing, if nothing went out yet) and waits for every append. */
  close(): Promise<void>;
  /** Bytes of log text sent (or queued to send). */
  sentBytes(): number;
}

export function createLiveLog(options: LiveLogOptions): LiveLog {
  let pending: LogLine[] = [];
  let pendingBytes = 0;
  let sent = 0;
  let capped = false;
  let cappedAnnounced = false;
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  let flushed = false;

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const truncated = capped && !cappedAnnounced;
    if (pending.length === 0 && !truncated) return;
    const lines = pending;
    pending = [];
    pendingBytes = 0;
    if (truncated) cappedAnnounced = true;
    flushed = true;
    chain = chain
      .then(() => options.append({ lines, ...(truncated ? { truncated: true } : {}) }))
      .catch((err: unknown) => options.onError?.(err));
  };

  return {
    push(lines) {
      if (capped) return;
      for (const line of lines) {
        const bytes = Buffer.byteLength(line.text, 'utf8');
        if (sent + bytes > options.maxBytes) {
          capped = true;
          break;
        }
        sent += bytes;
        pending.push(line);
        pendingBytes += bytes;
      }
      if (capped || pendingBytes >= options.batchBytes) flush();
      else if (!timer && pending.length > 0) {
        timer = setTimeout(flush, options.flushMs);
        timer.unref();
      }
    },
    async close() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (flushed) flush();
      await chain;
    },
    sentBytes: () => sent,
  };
}
