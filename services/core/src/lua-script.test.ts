/**
 * A script call on a plain client goes as `OneCopyCommand`: ioredis's bytes, written into one
 * buffer. With a Buffer among its arguments (BullMQ's packed options inside a run's fused end or
 * fetch) that is one text-to-bytes conversion per argument instead of a copy call per part; with
 * text only (since round 38: a binding call's claim and outcome), no rope flattened at the write.
 * Real redis-server for the round trip.
 */
import { createHash } from 'node:crypto';
import { startRedis } from '@islet/testkit';
import { Command, Redis } from 'ioredis';
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

  it('measures and writes an ASCII command a stretch of text at a time, making no text of its own', () => {
    const args = ['sha', 3, 'k1', 'k2', 'k3', ...Array.from({ length: 100 }, (_, i) => `a${i}`), binary, 'z'];
    const from = vi.spyOn(Buffer, 'from');
    const byteLength = vi.spyOn(Buffer, 'byteLength');
    const write = vi.spyOn(Buffer.prototype, 'write');
    new OneCopyCommand('evalsha', [...args]).toWritable({});
    // Two stretches (before the Buffer, after it): one measure and one write each, where until
    // round 43 each text argument was measured and written (round 42 `par-cpu`: 4–8 µs a call).
    expect(byteLength).toHaveBeenCalledTimes(2);
    expect(write.mock.calls.filter(([x]) => typeof x === 'string')).toHaveLength(2);
    expect(from.mock.calls.filter(([x]) => typeof x === 'string')).toHaveLength(0);
    write.mockClear();
    new Command('evalsha', args).toWritable({});
    // ioredis's own: a write a text argument, of a string it made for it (`$<n>\r\n<text>\r\n`),
    // into a buffer of its own, concatenated after.
    expect(write.mock.calls.length).toBeGreaterThanOrEqual(args.length - 1);
  });

  it('measures each text argument once and writes it once when the text is not ASCII', () => {
    const args = [
      'sha',
      3,
      'k1',
      'wert-ü',
      'k3',
      ...Array.from({ length: 100 }, (_, i) => `a${i}`),
      binary,
      'z',
    ];
    const texts = args.length - 1;
    const from = vi.spyOn(Buffer, 'from');
    const byteLength = vi.spyOn(Buffer, 'byteLength');
    const write = vi.spyOn(Buffer.prototype, 'write');
    new OneCopyCommand('evalsha', [...args]).toWritable({});
    // The first stretch's measure (not ASCII: the guess fails there), then the command's head and
    // each text argument, one measure and one write each (its `$<length>` written as bytes).
    expect(byteLength).toHaveBeenCalledTimes(1 + texts + 2);
    expect(write.mock.calls.filter(([x]) => typeof x === 'string')).toHaveLength(texts + 1);
    expect(from.mock.calls.filter(([x]) => typeof x === 'string')).toHaveLength(0);
  });

  it("takes the arguments it is given as its own (no copy), numbers made text as ioredis's toArg does", () => {
    const args: (string | number | Buffer)[] = ['sha', 2, 'k', 'v', 0, -1.5, binary];
    const ours = new OneCopyCommand('evalsha', args) as unknown as { args: unknown[] };
    const theirs = new Command('evalsha', ['sha', 2, 'k', 'v', 0, -1.5, binary]) as unknown as {
      args: unknown[];
    };
    expect(ours.args).toBe(args);
    expect(ours.args).toEqual(theirs.args);
  });

  it("leaves a key prefix to ioredis: the same keys and bytes as ioredis's own command", () => {
    const args = ['sha', 1, 'key', 'arg', binary];
    const ours = new OneCopyCommand('evalsha', [...args], { keyPrefix: 'p:' });
    const theirs = new Command('evalsha', [...args], { keyPrefix: 'p:' });
    const bytes = (c: Command) => Buffer.from(c.toWritable({}) as Buffer | string);
    expect(bytes(ours).equals(bytes(theirs))).toBe(true);
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

describe('OneCopyCommand of text only', () => {
  it("writes ioredis's bytes in one buffer, byte for byte: numbers, empty and multi-byte text, a journal claim's shape", () => {
    const textShapes: (string | number)[][] = [
      [
        'sha',
        1,
        'islet:journal:{r}',
        '0',
        1,
        'ping',
        'QmFzZTY0',
        'v1.k1.sealed',
        '{"kind":"app"}',
        'r-0',
        1765000000123,
        '0',
        604800,
        'tok',
        '1',
      ],
      ['', 0, -1.5, 'ключ-ü — ☃', '', 1e21, 'x'.repeat(70_000)],
      ['only'],
    ];
    for (const args of textShapes) {
      const theirs = new Command('evalsha', args).toWritable({});
      expect(typeof theirs).toBe('string');
      const ours = new OneCopyCommand('evalsha', [...args]).toWritable({});
      expect(Buffer.isBuffer(ours)).toBe(true);
      expect((ours as Buffer).equals(Buffer.from(theirs as string))).toBe(true);
    }
  });
});

describe('LuaScript without a Buffer argument, on a real redis', () => {
  it("sends the arguments a spread call gave ioredis, as ioredis's bytes in one buffer, walking no list through the iterator", async () => {
    const server = await startRedis({ appendOnly: false });
    const redis = createRedis(server.url);
    const piped = new Redis(server.url, { enableAutoPipelining: true });
    try {
      const script = new LuaScript('return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], #ARGV}');
      const keys = ['k1', 'k2'];
      const args = ['ключ-ü — ☃', 7, 2.5];
      const expected = ['k1', 'k2', 'ключ-ü — ☃', '7', '2.5', 3];
      // Unknown to the server first: EVALSHA meets NOSCRIPT and the call goes again as EVAL; the
      // measured call then goes as one EVALSHA.
      expect(await script.run(redis, keys, args)).toEqual(expected);
      const stats = await redis.info('commandstats');
      const calls = (name: string) =>
        Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
      expect([calls('evalsha'), calls('eval')]).toEqual([1, 1]);
      const sent: Command[] = [];
      const send = redis.sendCommand.bind(redis);
      redis.sendCommand = ((command: Command) => {
        sent.push(command);
        return send(command);
      }) as typeof redis.sendCommand;
      const iterate = Array.prototype[Symbol.iterator];
      const walked: number[] = [];
      Array.prototype[Symbol.iterator] = function (this: unknown[]) {
        walked.push(this.length);
        return iterate.call(this);
      } as typeof iterate;
      let reply: Promise<unknown>;
      try {
        reply = script.run(redis, keys, args);
      } finally {
        Array.prototype[Symbol.iterator] = iterate;
        redis.sendCommand = send;
      }
      expect(await reply).toEqual(expected);
      // Until round 37 (`end-spreads`) `send` spread the keys and the arguments into ioredis's call.
      expect(walked).toEqual([]);
      expect(sent).toHaveLength(1);
      const theirs = new Command('evalsha', [script.sha, keys.length, ...keys, ...args]);
      const ours = sent[0] as Command;
      // Until round 38 (`call-bisect`) a call of text only went as ioredis's own command (one
      // string, a rope flattened at the write); now as OneCopyCommand, with the same bytes.
      expect(ours).toBeInstanceOf(OneCopyCommand);
      expect(ours.name).toBe('evalsha');
      expect(ours.args).toEqual(theirs.args);
      const bytes = ours.toWritable({});
      expect(Buffer.isBuffer(bytes)).toBe(true);
      expect(bytes).toEqual(Buffer.from(theirs.toWritable({}) as string));
      // Auto-pipelined (ioredis hands the arguments to a pipeline's command): the same answer.
      expect(await script.run(piped, keys, args)).toEqual(expected);
    } finally {
      redis.disconnect();
      piped.disconnect();
      await server.stop();
    }
  });
});
