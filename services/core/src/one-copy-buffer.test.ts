/**
 * `OneCopyCommand` writes a command with Buffers among its arguments straight into the one buffer
 * it hands the socket: one allocation, no buffer a stretch of text and no concatenation. A run's
 * end (runner) and a submit (gateway) are 4–5 KB, past Node's buffer pool, so each extra buffer was
 * a fresh malloc and, after glibc returned the heap's top, fresh pages faulted in (round 24 `seq-sweep`).
 */
import { Command } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OneCopyCommand } from './lua-script.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

// An end's shape: ~100 text arguments (some multi-byte), BullMQ's packed options as a Buffer
// among them, ~5 KB in all.
const packed = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256));
const args: (string | Buffer)[] = [
  'sha',
  '12',
  ...Array.from({ length: 60 }, (_, i) => `islet:{runs-read-only}:key-${i}`),
  packed,
  ...Array.from({ length: 40 }, (_, i) => (i % 7 === 0 ? `wert-ü—${i}` : `v1.k1.${'x'.repeat(60)}.${i}`)),
  Buffer.alloc(0),
  'tail',
];

describe('OneCopyCommand, one buffer', () => {
  it('writes the same bytes as ioredis for a command past the buffer pool', () => {
    const ours = new OneCopyCommand('evalsha', args).toWritable({}) as Buffer;
    const theirs = new Command('evalsha', args).toWritable({});
    expect(Buffer.isBuffer(ours)).toBe(true);
    expect(ours.length).toBeGreaterThan(4096);
    expect(ours.equals(Buffer.from(theirs as Buffer | string))).toBe(true);
  });

  it('allocates the buffer sent once and concatenates nothing', () => {
    const concat = vi.spyOn(Buffer, 'concat');
    const alloc = vi.spyOn(Buffer, 'allocUnsafe');
    const from = vi.spyOn(Buffer, 'from');
    const out = new OneCopyCommand('evalsha', args).toWritable({}) as Buffer;
    expect(concat).not.toHaveBeenCalled();
    expect(from).not.toHaveBeenCalled();
    expect(alloc).toHaveBeenCalledTimes(1);
    expect(alloc.mock.results[0]?.value).toBe(out);
    // Exactly filled: the size measured is the size written.
    expect(alloc.mock.calls[0]?.[0]).toBe(out.length);
  });
});
