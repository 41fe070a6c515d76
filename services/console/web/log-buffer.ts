/**
 * The log lines a run page keeps: the first `headLines` and the latest `tailLines`, with a count of
 * what fell in between (lines and characters), so a program printing 64 MiB costs the tab a bounded
 * amount of memory and the view a marker row, not a million rows. Each kept line's text is cut at
 * `lineChars` (one `console.log` of a huge string is one line). Mutable on purpose: a live stream
 * appends thousands of lines a second, and copying an array per batch would be quadratic.
 */
interface LogLine {
  level: string;
  text: string;
  /** Characters cut from the end of this line's text (0: shown whole). */
  cut: number;
}

interface LogBufferLimits {
  headLines: number;
  tailLines: number;
  lineChars: number;
}

const DEFAULT_LOG_LIMITS: LogBufferLimits = { headLines: 5_000, tailLines: 5_000, lineChars: 2_000 };

export class LogBuffer {
  readonly head: LogLine[] = [];
  /** A ring: `tail[(tailStart + i) % tailLines]` is the i-th kept line after the gap. */
  private tail: LogLine[] = [];
  private tailStart = 0;
  /** Lines and characters dropped between the head and the tail. */
  skippedLines = 0;
  skippedChars = 0;
  total = 0;
  totalChars = 0;
  private headClosed = false;
  /** Bumped on every change: a cheap dependency for memoized views. */
  version = 0;
  readonly levels = new Set<string>();

  readonly limits: LogBufferLimits;

  constructor(limits: LogBufferLimits = DEFAULT_LOG_LIMITS) {
    this.limits = limits;
  }

  /**
   * Lines known but not here (a bounded record left them out): the head ends, they count as the
   * gap, and later lines go to the tail.
   */
  gap(lines: number, chars: number): void {
    this.headClosed = true;
    this.skippedLines += lines;
    this.skippedChars += chars;
    this.total += lines;
    this.totalChars += chars;
    this.version++;
  }

  push(level: string, text: string): void {
    this.total++;
    this.totalChars += text.length;
    this.levels.add(level);
    this.version++;
    const cut = Math.max(0, text.length - this.limits.lineChars);
    const line: LogLine = { level, text: cut ? text.slice(0, this.limits.lineChars) : text, cut };
    if (!this.headClosed && this.head.length < this.limits.headLines) {
      this.head.push(line);
      return;
    }
    if (this.limits.tailLines === 0) {
      this.skippedLines++;
      this.skippedChars += text.length;
      return;
    }
    if (this.tail.length < this.limits.tailLines) {
      this.tail.push(line);
      return;
    }
    const old = this.tail[this.tailStart]!;
    this.skippedLines++;
    this.skippedChars += old.text.length + old.cut;
    this.tail[this.tailStart] = line;
    this.tailStart = (this.tailStart + 1) % this.limits.tailLines;
  }

  /** Kept lines after the gap, oldest first. */
  tailLines(): LogLine[] {
    return [...this.tail.slice(this.tailStart), ...this.tail.slice(0, this.tailStart)];
  }

  /** Number of lines kept in memory (head + tail), never more than headLines + tailLines. */
  get kept(): number {
    return this.head.length + this.tail.length;
  }

  clear(): void {
    this.headClosed = false;
    this.head.length = 0;
    this.tail = [];
    this.tailStart = 0;
    this.skippedLines = 0;
    this.skippedChars = 0;
    this.total = 0;
    this.totalChars = 0;
    this.levels.clear();
    this.version++;
  }
}

/** A row of the view: a kept line, or the marker standing for the lines dropped between head and tail. */
type LogRow = { line: LogLine; n: number } | { gap: { lines: number; chars: number } };

/** The rows to show for a level filter (`all` or one level), with each line's number in the output. */
export function logRows(buf: LogBuffer, only: string): LogRow[] {
  const rows: LogRow[] = [];
  const keep = (l: LogLine) => only === 'all' || l.level === only;
  buf.head.forEach((line, i) => {
    if (keep(line)) rows.push({ line, n: i + 1 });
  });
  if (buf.skippedLines > 0) rows.push({ gap: { lines: buf.skippedLines, chars: buf.skippedChars } });
  const tail = buf.tailLines();
  const first = buf.head.length + buf.skippedLines;
  tail.forEach((line, i) => {
    if (keep(line)) rows.push({ line, n: first + i + 1 });
  });
  return rows;
}
