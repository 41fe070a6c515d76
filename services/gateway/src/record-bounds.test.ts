/** A record cut for a browser: the first and last lines within the budget, what was left out said. */
import type { CodeRunRecord } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { boundRecord, logText } from './record-bounds.ts';

const record = (lines: string[], text = 'ok'): CodeRunRecord => ({
  id: 'r',
  session: 's',
  turn: 't',
  callId: 'c',
  status: 'Completed',
  code: 'return 1',
  reason: 'Print',
  calls: [],
  createdAt: 1,
  updatedAt: 2,
  text,
  result: { _tag: 'Completed', value: 1, logs: lines.map((text) => ({ level: 'log' as const, text })) },
});

describe('boundRecord', () => {
  it('leaves a record within the budget as it is', () => {
    const r = record(['a', 'b']);
    expect(boundRecord(r, 1024)).toEqual(r);
  });

  it('keeps the first and last lines within half the budget each and counts the rest', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, '0')}${'x'.repeat(97)}`);
    const b = boundRecord(record(lines), 2048);
    const kept = b.result?.logs.map((l) => l.text.slice(0, 3)) ?? [];
    expect(kept.slice(0, 3)).toEqual(['000', '001', '002']);
    expect(kept.at(-1)).toBe('999');
    expect(b.logsOmitted).toEqual({
      lines: 1000 - kept.length,
      bytes: 100_000 - (b.result?.logs ?? []).reduce((n, l) => n + l.text.length, 0),
      after: b.logsOmitted?.after,
      totalLines: 1000,
      totalBytes: 100_000,
    });
    expect((b.result?.logs ?? []).reduce((n, l) => n + l.text.length, 0)).toBeLessThanOrEqual(2048);
  });

  it('cuts one huge line at a character boundary, and a huge text in the middle', () => {
    const b = boundRecord(record(['é'.repeat(10_000)], 'y'.repeat(5000)), 1024);
    const first = b.result?.logs[0]?.text ?? '';
    expect(Buffer.byteLength(first)).toBeLessThanOrEqual(512);
    expect(first).toMatch(/^é+$/);
    expect(b.textOmittedChars).toBe(5000 - 1024);
    expect(b.text).toContain(`… ${5000 - 1024} characters not shown …`);
  });
});

describe('logText', () => {
  it('writes a line each, the level before any but log', () => {
    const text = [
      ...logText([
        { level: 'log', text: 'a' },
        { level: 'warn', text: 'b' },
      ]),
    ].join('');
    expect(text).toBe('a\n[warn] b\n');
  });
});
