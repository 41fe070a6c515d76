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

// Arguments of every kind `send` is given: ASCII, multi-byte UTF-8 (2, 3 and 4 bytes), lone
// surrogates (high at an end, low at a start: UTF-8's replacement bytes), empty text, numbers and
// Buffers (empty too), in commands of text only and mixed.
const kinds: ((i: number) => string | number | Buffer)[] = [
  (i) => `islet:{runs}:k-${i}`,
  (i) => 'x'.repeat(i * 37),
  () => '',
  (i) => `wert-ü—${i}`,
  (i) => `emoji 😀 ${i}`,
  (i) => `${i}\uD800`,
  (i) => `\uDC00${i}`,
  (i) => i * 1013,
  (i) => -i / 7,
  (i) => Buffer.from([i % 256, 0, 255, 13, 10]),
  () => Buffer.alloc(0),
];

function generated(seed: number, textOnly: boolean): (string | number | Buffer)[] {
  const out: (string | number | Buffer)[] = ['sha', 2];
  let state = seed;
  for (let i = 0; i < 3 + (seed % 90); i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const kind = kinds[state % (textOnly ? kinds.length - 2 : kinds.length)] as (
      i: number,
    ) => string | number | Buffer;
    out.push(kind(i));
  }
  return out;
}

describe('OneCopyCommand, the bytes', () => {
  it("writes ioredis's bytes for generated commands of every argument kind", () => {
    let compared = 0;
    for (let seed = 1; seed <= 400; seed++) {
      for (const textOnly of [true, false]) {
        const args = generated(seed, textOnly);
        const name = seed % 2 === 0 ? 'evalsha' : 'eval';
        const ours = new OneCopyCommand(name, args.slice()).toWritable({}) as Buffer;
        const theirs = new Command(name, args.slice()).toWritable({});
        expect(ours.equals(Buffer.from(theirs as Buffer | string)), `seed ${seed} ${textOnly}`).toBe(true);
        compared++;
      }
    }
    expect(compared).toBe(800);
  });

  it('measures an ASCII command of text once, not an argument at a time', () => {
    // A claim's shape: text and numbers, all ASCII.
    const claim = ['sha', 4, 'a', 'b', 'c', 'd', 'run-1', 17, 'tool.name', '{"x":1}', '', 'grant', 42];
    const measure = vi.spyOn(Buffer, 'byteLength');
    const out = new OneCopyCommand('evalsha', claim.slice()).toWritable({}) as Buffer;
    expect(measure).toHaveBeenCalledTimes(1);
    expect(out.equals(Buffer.from(new Command('evalsha', claim.slice()).toWritable({}) as string))).toBe(
      true,
    );
  });

  it('measures an ASCII command with Buffers once a stretch of text between them', () => {
    // A submit's shape: text around BullMQ's two packed options.
    const submit = [
      'sha',
      2,
      'k1',
      'k2',
      'v'.repeat(50),
      7,
      Buffer.from([1, 2, 3]),
      '{"a":1}',
      Buffer.from([4]),
    ];
    const measure = vi.spyOn(Buffer, 'byteLength');
    const out = new OneCopyCommand('evalsha', submit.slice()).toWritable({}) as Buffer;
    expect(measure).toHaveBeenCalledTimes(3);
    expect(out.equals(new Command('evalsha', submit.slice()).toWritable({}) as Buffer)).toBe(true);
  });
});
