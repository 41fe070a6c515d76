/**
 * A run's log lines inside the sandbox host: the output budget they spend, the lines batched into
 * `logs` frames, and when a batch goes out (host-run.ts hands every line here).
 */
import type { flush, send } from './host-output.ts';
import { outputLimitMessage } from './limits.ts';
import { cutToBytes } from './utf8.ts';
import type { FromHost, HostDone, ToHost } from './wire.ts';

const LOG_FLUSH_BYTES = 1024 * 1024;
/** Lines of the first turn written one by one (see `push`); later ones in batches of this many. */
const FIRST_TURN_EAGER_LINES = 64;
const FIRST_TURN_BATCH_LINES = 64;
const LEVELS: readonly string[] = ['log', 'info', 'warn', 'error', 'debug'];

/** Where a run's frames go: the host's stdout (host-output.ts); a test hands its own. */
export interface HostOutput {
  send: typeof send;
  flush: typeof flush;
}

export class HostRunLog {
  private outputUsed = 0;
  private logsFull = false;
  private logsTruncated = false;
  private truncationReported = false;
  /** Lines printed in turns on the host's thread so far. */
  private thisThreadLines = 0;
  private batch: [FromHost & { t: 'logs' }][0]['lines'] = [];
  private batchBytes = 0;
  private flushScheduled = false;

  private readonly msg: Extract<ToHost, { t: 'run' }>;
  private readonly out: HostOutput;
  /** Whether the program runs on the host's thread now (a turn there: HostRun `onThisThread`). */
  private readonly onThisThread: () => boolean;

  constructor(msg: Extract<ToHost, { t: 'run' }>, out: HostOutput, onThisThread: () => boolean) {
    this.msg = msg;
    this.out = out;
    this.onThisThread = onThisThread;
  }

  /** Output the run's end counts against (Code Mode's log has a budget of its own). */
  get used(): number {
    return this.msg.outputCap === 'separate' ? 0 : this.outputUsed;
  }

  /** Lines or a truncation not written yet. */
  get pending(): boolean {
    return this.batch.length > 0 || (this.logsTruncated && !this.truncationReported);
  }

  /** A line the program printed; the end it brings when it passes the output limit. */
  line(level: unknown, text: unknown): HostDone | undefined {
    if (typeof level !== 'string' || typeof text !== 'string') return undefined;
    if (!LEVELS.includes(level)) return undefined;
    const bytes = Buffer.byteLength(text, 'utf8');
    if (this.logsFull) return undefined;
    const room = this.msg.outputBytes - this.outputUsed;
    if (bytes > room) {
      const fitting = cutToBytes(text, room);
      if (fitting !== '') this.push(level, fitting);
      this.outputUsed = this.msg.outputBytes;
      if (this.msg.outputCap === 'separate') {
        // Code Mode: the log keeps the most it may; the program goes on.
        this.logsFull = true;
        this.logsTruncated = true;
        return undefined;
      }
      return { status: 'failed', kind: 'output-limit', message: outputLimitMessage(this.msg.outputBytes) };
    }
    this.outputUsed += bytes;
    this.push(level, text);
    return undefined;
  }

  private push(level: string, text: string): void {
    this.batch.push([level as 'log', text]);
    this.batchBytes += text.length;
    // In a turn on this thread nothing deferred runs until the program yields. A run's first lines
    // there wait for no later one, so what a program printed is out even if the turn never returns
    // (a kill, a long builtin); past them a flood goes out FIRST_TURN_BATCH_LINES at a time (a write
    // and a frame per line cost the runner CPU for every line), the rest with the turn's return.
    if (
      this.batchBytes >= LOG_FLUSH_BYTES ||
      (this.onThisThread() &&
        (++this.thisThreadLines <= FIRST_TURN_EAGER_LINES || this.batch.length >= FIRST_TURN_BATCH_LINES))
    )
      this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  /** `gather`: written with what follows (a turn's return), not now (see host-output.ts `send`). */
  flush(gather: boolean | 'turn' = false): void {
    const truncated = this.logsTruncated && !this.truncationReported;
    if (this.batch.length === 0 && !truncated) return;
    const lines = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    if (truncated) this.truncationReported = true;
    this.out.send({ t: 'logs', lines, ...(truncated ? { truncated: true } : {}) }, gather);
  }
}
