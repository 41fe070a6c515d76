/**
 * A call site's arguments kept encoded by position (arg-memo.ts): the bytes `OneCopyCommand` writes
 * with a memo are ioredis's, byte for byte, call after call, whatever changes between calls; a text
 * that comes twice in a row at its position is measured and written once, then copied (no
 * `Buffer.byteLength`, no `Buffer#write` for it).
 */
import { Command } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ArgMemo } from './arg-memo.ts';
import { OneCopyCommand } from './lua-script.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

const packed = (n: number) => Buffer.from(Array.from({ length: 40 }, (_, i) => (i * 7 + n) & 0xff));

/** A fused end's shape: fixed keys and terms, a run's id, time, seal and packed options. */
const call = (run: number): (string | number | Buffer)[] => [
  'sha1',
  4,
  'q:wait',
  `q:${run}`,
  'run:{tenant}:ключ-ü',
  'q:marker',
  `${run}`,
  1_700_000_000_000 + run,
  'returnvalue',
  packed(run),
  'x'.repeat(600),
  run % 2 ? 'odd' : 'even',
  '',
  0.5,
  'Completed',
];

const bytes = (w: string | Buffer) => Buffer.from(w as Buffer | string);

describe('ArgMemo', () => {
  it("keeps ioredis's bytes, call after call, with per-call, alternating, multi-byte, long and empty arguments", () => {
    const memo = new ArgMemo();
    for (let run = 0; run < 6; run++) {
      const theirs = new Command('evalsha', call(run)).toWritable({});
      const command = new OneCopyCommand('evalsha', call(run));
      command.memo = memo;
      expect(bytes(command.toWritable({})).equals(bytes(theirs))).toBe(true);
    }
    // Kept from the second call on: the sha, the key count, the three fixed keys, 'returnvalue', '',
    // 0.5, 'Completed' (9 a call); never the run's own, the alternating one, nor the 600-byte text.
    expect(memo.made).toBe(9);
    expect(memo.hits).toBe(9 * 5);
  });

  it('a kept argument is neither measured nor written again', () => {
    const memo = new ArgMemo();
    const args = () => ['sha', 2, 'k:one', 'k:two', ...Array.from({ length: 50 }, (_, i) => `fixed-${i}`)];
    for (let i = 0; i < 2; i++) {
      const c = new OneCopyCommand('evalsha', args());
      c.memo = memo;
      c.toWritable({});
    }
    const byteLength = vi.spyOn(Buffer, 'byteLength');
    const write = vi.spyOn(Buffer.prototype, 'write');
    const c = new OneCopyCommand('evalsha', args());
    c.memo = memo;
    const out = bytes(c.toWritable({}));
    // The command's head alone.
    expect(byteLength.mock.calls.length).toBe(2);
    expect(write.mock.calls.length).toBe(1);
    vi.restoreAllMocks();
    expect(out.equals(bytes(new Command('evalsha', args()).toWritable({})))).toBe(true);
  });
});
