import type { LogLineRecord } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { createLiveLog } from './live-log.ts';

const line = (text: string): LogLineRecord => ({ level: 'log', text });

describe('live log batching', () => {
  it('sends lines in print order, batched, and everything left on close', async () => {
    const events: Array<{ lines: LogLineRecord[]; truncated?: boolean }> = [];
    const log = createLiveLog({
      maxBytes: 1_000_000,
      flushMs: 60_000,
      batchBytes: 10,
      append: async (d) => {
        events.push(d);
      },
    });
    log.push([line('ab'), line('cd')]);
    // Under the batch size and long before the flush timer: nothing sent yet.
    expect(events).toEqual([]);
    log.push([line('0123456789')]);
    log.push([line('tail')]);
    await log.close();
    // Once a batch went out, close sends the rest: the live stream is complete.
    expect(events.map((e) => e.lines.map((l) => l.text))).toEqual([['ab', 'cd', '0123456789'], ['tail']]);
  });

  it('stops at the byte cap with one truncated event, and keeps order when appends are slow', async () => {
    const events: Array<{ lines: LogLineRecord[]; truncated?: boolean }> = [];
    const log = createLiveLog({
      maxBytes: 12,
      flushMs: 60_000,
      batchBytes: 4,
      append: (d) =>
        new Promise((resolve) =>
          setTimeout(
            () => {
              events.push(d);
              resolve(undefined);
            },
            events.length === 0 ? 30 : 0,
          ),
        ),
    });
    log.push([line('aaaa')]);
    log.push([line('bbbb')]);
    log.push([line('cccc'), line('dddd')]);
    log.push([line('never')]);
    await log.close();
    // The line that passed the cap is not sent; the event carrying the last fitting lines says so.
    expect(events.map((e) => e.lines.map((l) => l.text))).toEqual([['aaaa'], ['bbbb'], ['cccc']]);
    expect(events.map((e) => e.truncated === true)).toEqual([false, false, true]);
    expect(log.sentBytes()).toBe(12);
  });

  it('sends nothing for a run that ends before its first batch (the end record has it)', async () => {
    const events: unknown[] = [];
    const log = createLiveLog({
      maxBytes: 100,
      flushMs: 60_000,
      batchBytes: 1000,
      append: async (d) => {
        events.push(d);
      },
    });
    log.push([line('short run')]);
    await log.close();
    expect(events).toEqual([]);
  });

  it('flushes on its timer', async () => {
    const events: unknown[] = [];
    const log = createLiveLog({
      maxBytes: 100,
      flushMs: 10,
      batchBytes: 1000,
      append: async (d) => {
        events.push(d);
      },
    });
    log.push([line('x')]);
    await expect.poll(() => events.length).toBe(1);
    await log.close();
    expect(events).toHaveLength(1);
  });
});
