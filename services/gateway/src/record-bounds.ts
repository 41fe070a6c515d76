/**
 * A code-run record cut to a size a browser can hold: `GET /v1/code-runs/{id}?maxLogBytes=N` keeps
 * the first and the last log lines within N bytes (half each; a single line longer than its half
 * is cut), says what it left out in `logsOmitted`, and cuts the result `text` the same way
 * (`textOmittedChars`). A run may print 64 MiB, and its whole record (the lines plus a text that
 * repeats them) is twice that: what the console's run page reads instead, with the full output
 * one download away (`GET /v1/code-runs/{id}/logs`).
 */
import type { CodeRunRecord, LogLineRecord } from '@islet/protocol';
import { z } from 'zod';

export const recordQuerySchema = z
  .object({
    maxLogBytes: z.coerce
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .optional(),
  })
  .strict();

interface LogsOmitted {
  /** Lines left out, between the head and the tail kept. */
  lines: number;
  /** UTF-8 bytes of the lines left out (and of the parts of lines cut). */
  bytes: number;
  /** How many lines come before the gap (the head kept). */
  after: number;
  /** Every line the run printed, and their bytes. */
  totalLines: number;
  totalBytes: number;
}

type BoundedRecord = CodeRunRecord & { logsOmitted?: LogsOmitted; textOmittedChars?: number };

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** A line cut to at most `max` bytes of UTF-8 (never inside a character). */
function cutLine(line: LogLineRecord, max: number): LogLineRecord {
  const b = Buffer.from(line.text, 'utf8');
  if (b.length <= max) return line;
  return {
    level: line.level,
    text: b
      .subarray(0, max)
      .toString('utf8')
      .replace(/\uFFFD$/, ''),
  };
}

export function boundRecord(record: CodeRunRecord, maxBytes: number): BoundedRecord {
  const out: BoundedRecord = { ...record };
  const half = Math.floor(maxBytes / 2);
  if (out.text !== undefined && out.text.length > maxBytes) {
    const omitted = out.text.length - 2 * half;
    out.text = `${out.text.slice(0, half)}\n… ${omitted} characters not shown …\n${out.text.slice(-half)}`;
    out.textOmittedChars = omitted;
  }
  const logs = record.result?.logs;
  if (!record.result || !logs) return out;
  let totalBytes = 0;
  for (const l of logs) totalBytes += bytes(l.text);
  if (totalBytes <= maxBytes) return out;
  const head: LogLineRecord[] = [];
  let used = 0;
  for (const l of logs) {
    if (used >= half) break;
    const kept = cutLine(l, half - used);
    head.push(kept);
    used += bytes(kept.text);
  }
  const tail: LogLineRecord[] = [];
  used = 0;
  for (let i = logs.length - 1; i >= head.length && used < half; i--) {
    const kept = cutLine(logs[i]!, half - used);
    tail.unshift(kept);
    used += bytes(kept.text);
  }
  let keptBytes = 0;
  for (const l of [...head, ...tail]) keptBytes += bytes(l.text);
  out.result = { ...record.result, logs: [...head, ...tail] };
  out.logsOmitted = {
    lines: logs.length - head.length - tail.length,
    bytes: totalBytes - keptBytes,
    after: head.length,
    totalLines: logs.length,
    totalBytes,
  };
  return out;
}

/** The run's printed lines as plain text, a line each (`[level] ` before any but `log`), in chunks. */
export function* logText(logs: readonly LogLineRecord[], linesPerChunk = 1000): Generator<string> {
  for (let i = 0; i < logs.length; i += linesPerChunk) {
    let chunk = '';
    for (const l of logs.slice(i, i + linesPerChunk))
      chunk += `${l.level === 'log' ? '' : `[${l.level}] `}${l.text}\n`;
    yield chunk;
  }
}
