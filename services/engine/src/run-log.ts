/**
 * The log lines a Run (run.ts) keeps, within the output cap: the host enforces the cap; this is the
 * engine's own check of what it keeps; it hands new lines to a live-log listener.
 */
import type { LogLine } from './types.ts';
import { cutToBytes } from './utf8.ts';

export class RunLog {
  readonly lines: LogLine[] = [];
  /** The cap was reached (here or, as the host said, there): nothing more is kept. */
  truncated = false;
  private bytes = 0;
  private readonly capBytes: number;

  constructor(capBytes: number) {
    this.capBytes = capBytes;
  }

  /** Keeps what fits of `lines`; true when they reached the cap (their fitting part kept). */
  keep(lines: [LogLine['level'], string][]): boolean {
    for (const [level, text] of lines) {
      if (this.truncated) return false;
      const bytes = Buffer.byteLength(text, 'utf8');
      if (this.bytes + bytes > this.capBytes) {
        const fitting = cutToBytes(text, this.capBytes - this.bytes);
        if (fitting !== '') this.lines.push({ level, text: fitting });
        this.bytes = this.capBytes;
        this.truncated = true;
        return true;
      }
      this.bytes += bytes;
      this.lines.push({ level, text });
    }
    return false;
  }

  /** Hands the lines kept from index `from` on to a live-log listener, if any and if there are some. */
  tell(from: number, onLog: ((lines: LogLine[]) => void) | undefined): void {
    if (onLog && this.lines.length > from) {
      try {
        onLog(this.lines.slice(from));
      } catch {
        // A live-log listener's failure must not touch the run.
      }
    }
  }
}
