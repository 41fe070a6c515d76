/** The run page's log buffer: bounded memory whatever the output, with an honest count of what it dropped. */
import { describe, expect, it } from 'vitest';
import { LogBuffer, logRows } from '../web/log-buffer.ts';

describe('LogBuffer', () => {
  it('keeps the head and the latest tail, and counts the lines and characters between', () => {
    const b = new LogBuffer({ headLines: 3, tailLines: 2, lineChars: 100 });
    for (let i = 1; i <= 10; i++) b.push(i % 2 ? 'log' : 'warn', `line ${i}`);
    expect(b.total).toBe(10);
    expect(b.kept).toBe(5);
    expect(b.head.map((l) => l.text)).toEqual(['line 1', 'line 2', 'line 3']);
    expect(b.tailLines().map((l) => l.text)).toEqual(['line 9', 'line 10']);
    expect(b.skippedLines).toBe(5);
    expect(b.skippedChars).toBe('line 4line 5line 6line 7line 8'.length);
    const rows = logRows(b, 'all');
    expect(rows).toHaveLength(6);
    expect(rows[3]).toEqual({ gap: { lines: 5, chars: 30 } });
    expect(rows[4]).toMatchObject({ n: 9, line: { text: 'line 9' } });
    expect(logRows(b, 'warn').filter((r) => 'line' in r)).toHaveLength(2);
  });

  it('takes a gap a bounded record left out: the head ends there, later lines number after it', () => {
    const b = new LogBuffer({ headLines: 100, tailLines: 100, lineChars: 100 });
    b.push('log', 'first');
    b.gap(998, 9980);
    b.push('log', 'last');
    expect(b.total).toBe(1000);
    expect(b.head.map((l) => l.text)).toEqual(['first']);
    const rows = logRows(b, 'all');
    expect(rows).toEqual([
      { line: { level: 'log', text: 'first', cut: 0 }, n: 1 },
      { gap: { lines: 998, chars: 9980 } },
      { line: { level: 'log', text: 'last', cut: 0 }, n: 1000 },
    ]);
  });

  it('cuts a huge line and says by how much; memory stays bounded for a million lines', () => {
    const b = new LogBuffer({ headLines: 100, tailLines: 100, lineChars: 10 });
    b.push('log', 'x'.repeat(64 * 1024 * 1024));
    expect(b.head[0]).toEqual({ level: 'log', text: 'x'.repeat(10), cut: 64 * 1024 * 1024 - 10 });
    for (let i = 0; i < 1_000_000; i++) b.push('log', 'y');
    expect(b.kept).toBe(200);
    expect(b.total).toBe(1_000_001);
    expect(b.skippedLines).toBe(1_000_001 - 200);
    expect(logRows(b, 'all')).toHaveLength(201);
  });
});
