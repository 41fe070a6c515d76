/**
 * A script call whose arguments hold a Buffer (BullMQ's packed options inside a run's fused end or
 * fetch) goes as `OneCopyCommand`: ioredis's bytes, with one text-to-bytes conversion per stretch
 * of text between Buffers instead of a copy call per part. Real redis-server for the round trip.
 */
import { createHash } from 'node:crypto';
import { startRedis } from '@islet/testkit';
import { Command } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LuaScript, OneCopyCommand } from './lua-script.ts';
import { createRedis } from './redis.ts';

const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const shapes: (string | number | Buffer)[][] = [
  ['sha', 2, 'k1', 'k2', 'text', 7, binary],
  [binary, 'a', Buffer.alloc(0), '', 'ключ-ü — ☃', binary, 3.5],
  ['only', 'text', 1],
  [Buffer.from('x')],
];

afterEach(() => {
  vi.restoreAllMocks();
});

describe('OneCopyCommand', () => {
  it("writes ioredis's bytes, byte for byte, with Buffers anywhere, empty ones and multi-byte text", () => {
    for (const args of shapes) {
      const theirs = new Command('evalsha', args).toWritable({});
      const ours = new OneCopyCommand('evalsha', args).toWritable({});
      expect(Buffer.from(ours as Buffer | string).equals(Buffer.from(theirs as Buffer | string))).toBe(true);
    }
  });

  it('converts each stretch of text between Buffers once, not each part', () => {
    const args = ['sha', 3, 'k1', 'k2', 'k3', ...Array.from({ length: 100 }, (_, i) => `a${i}`), binary, 'z'];
    const from = vi.spyOn(Buffer, 'from');
    const write = vi.spyOn(Buffer.prototype, 'write');
    new OneCopyCommand('evalsha', args).toWritable({});
    // Two stretches (before the Buffer, after it), each written once into the buffer sent.
    expect(write.mock.calls.filter(([x]) => typeof x === 'string')).toHaveLength(2);
    expect(from.mock.calls.filter(([x]) => typeof x === 'string')).toHaveLength(0);
    write.mockClear();
    new Command('evalsha', args).toWritable({});
    // ioredis's own: a copy call per text part (one a text argument, its length written before it).
    expect(write.mock.calls.length).toBeGreaterThanOrEqual(args.length - 1);
  });
});

describe('LuaScript with a Buffer argument, on a real redis', () => {
  it('arrives intact through EVAL (first call: NOSCRIPT) and EVALSHA', async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    try {
      const script = new LuaScript('return {KEYS[1], #ARGV[1], redis.sha1hex(ARGV[1]), ARGV[2], #ARGV}');
      const text = 'ключ-ü — ☃';
      const expected = ['k', 256, createHash('sha1').update(binary).digest('hex'), text, 3];
      for (let i = 0; i < 2; i++)
        expect(await script.run(redis, ['k'], [binary as unknown as string, text, 9])).toEqual(expected);
      const stats = await redis.info('commandstats');
      const calls = (name: string) =>
        Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
      // The first EVALSHA met NOSCRIPT and fell back to EVAL; the second went as EVALSHA.
      expect([calls('evalsha'), calls('eval')]).toEqual([2, 1]);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
