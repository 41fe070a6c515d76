/**
 * A connection switched by `readRepliesAsText` gets the same replies as a plain ioredis client —
 * UTF-8 text of several bytes a character, bytes that are no UTF-8, a reply cut over many reads
 * (characters split between reads), arrays, errors (alone and inside a script's or a transaction's
 * array), `…Buffer` commands (Buffers still, a transaction's included), scripts, hashes, pipelined
 * replies — and makes no Buffer slice for a text reply and no conversion of it (the mechanism: the
 * parser in text mode for a command that asked for text). Real redis-server.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { startRedis } from '@islet/testkit';
import RedisParser from 'redis-parser';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRedis, type Redis } from './redis.ts';
import { readRepliesDirect } from './redis-direct-read.ts';
import { parseRepliesAsText, readRepliesAsText, replyWantsText } from './redis-text-replies.ts';

const streamOf = (redis: Redis) => (redis as unknown as { stream: unknown }).stream;
const requireIoredis = createRequire(createRequire(import.meta.url).resolve('ioredis'));
const Command = (requireIoredis('./Command') as { default: new (name: string, args: string[]) => unknown })
  .default;

/** Seeded bytes: every value 0–255, invalid UTF-8 included. */
const binary = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(70_000)]);
/** Three-byte characters (and a four-byte one) over ~1.5 MiB: many a read ends inside one. */
const wide = `${'ключ-☃-𝄞-'.repeat(100_000)}end`;

async function work(r: Redis): Promise<unknown[]> {
  const out: unknown[] = [];
  out.push(await r.set('t', 'ключ-☃-𝄞'), await r.get('t'), await r.get('missing'));
  out.push(await r.set('bin', binary), await r.get('bin'), await r.getBuffer('bin'));
  out.push(
    await r.set('wide', wide),
    (await r.get('wide')) === wide,
    (await r.getBuffer('wide'))?.toString() === wide,
  );
  out.push(await r.set('bigbin', Buffer.concat([binary, binary, binary, randomBytes(0)])));
  out.push((await r.get('bigbin')) === (await r.getBuffer('bigbin'))?.toString());
  out.push(
    await r.rpush('l', 'a', 'ж', binary, ''),
    await r.lrange('l', 0, -1),
    await r.lrangeBuffer('l', 0, -1),
  );
  out.push(await r.hset('h', 'f', 'в', 'g', binary), await r.hgetall('h'), await r.hgetallBuffer('h'));
  out.push(
    await r.incr('n'),
    await r.ping(),
    await r.ping('пинг'),
    await r.pingBuffer('пинг'),
    await r.type('h'),
  );
  out.push(await r.get('h').catch((e: Error) => [e.name, e.message]));
  out.push(
    await r.eval("return {KEYS[1], ARGV[1], 42, {'x', 'й'}, redis.error_reply('BAD it')}", 1, 'к', 'б'),
  );
  out.push(await r.callBuffer('eval', 'return {KEYS[1], ARGV[1], 42}', '1', 'к', 'б'));
  out.push(await r.eval("return redis.error_reply('NOPE ☃')", 0).catch((e: Error) => [e.name, e.message]));
  out.push(await r.multi().get('t').getBuffer('t').get('h').incr('n').exec());
  out.push(await r.pipeline().get('t').getBuffer('bin').lrange('l', 0, 1).exec());
  out.push(await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? r.get('t') : r.getBuffer('t')))));
  const greet = r as Redis & { greet(k: string): Promise<unknown>; greetBuffer(k: string): Promise<unknown> };
  out.push(await greet.greet('t'), await greet.greetBuffer('t'));
  // A command built without an encoding resolves with what the parser made: Buffers, as before.
  out.push(await r.sendCommand(new Command('get', ['t']) as Parameters<Redis['sendCommand']>[0]));
  return out;
}

function withScript(r: Redis): Redis {
  r.defineCommand('greet', { numberOfKeys: 1, lua: "return {redis.call('GET', KEYS[1]), 'ü'}" });
  return r;
}

describe('replyWantsText', () => {
  const queueOf = (command?: { name: string; replyEncoding?: string | null }) => ({
    peekFront: () => (command ? { command } : undefined),
    length: command ? 1 : 0,
  });
  const free = { subscriber: false };
  it('is text only for a command that asked for utf8, outside subscriber mode', () => {
    expect(replyWantsText(queueOf({ name: 'get', replyEncoding: 'utf8' }), free)).toBe(true);
    expect(replyWantsText(queueOf({ name: 'evalsha', replyEncoding: 'utf8' }), free)).toBe(true);
    expect(replyWantsText(queueOf({ name: 'get', replyEncoding: null }), free)).toBe(false);
    expect(replyWantsText(queueOf({ name: 'get' }), free)).toBe(false);
    expect(replyWantsText(queueOf(), free)).toBe(false);
    expect(replyWantsText(queueOf({ name: 'subscribe', replyEncoding: 'utf8' }), free)).toBe(false);
    expect(replyWantsText(queueOf({ name: 'PUNSUBSCRIBE', replyEncoding: 'utf8' }), free)).toBe(false);
    // A message pushed while a PING waits in subscriber mode must reach `messageBuffer` as bytes.
    const ping = queueOf({ name: 'ping', replyEncoding: 'utf8' });
    expect(replyWantsText(ping, { subscriber: {} })).toBe(false);
  });
});

describe('readRepliesAsText', () => {
  it("parses with the redis-parser module ioredis's DataHandler loads", () => {
    expect(RedisParser).toBe(requireIoredis('redis-parser'));
  });

  let server: Awaited<ReturnType<typeof startRedis>>;
  beforeAll(async () => {
    server = await startRedis({ appendOnly: false });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('gives every reply as a plain client does: text, bytes, big, arrays, errors, Buffers', async () => {
    const plain = withScript(createRedis(server.url));
    const text = withScript(createRedis(server.url));
    const direct = withScript(createRedis(server.url));
    const read = readRepliesAsText(text);
    readRepliesDirect(direct);
    const readDirect = readRepliesAsText(direct);
    try {
      const theirs = await work(plain);
      await plain.flushall();
      const ours = await work(text);
      await plain.flushall();
      const oursDirect = await work(direct);
      expect(read.switched()).toBe(1);
      expect(readDirect.switched()).toBe(1);
      expect(ours).toEqual(theirs);
      expect(oursDirect).toEqual(theirs);
      // toEqual tells a Buffer from a string; the types spelled out for the ones that matter.
      expect(typeof ours[4]).toBe('string');
      expect(Buffer.isBuffer(ours[5])).toBe(true);
      expect((ours[5] as Buffer).equals(binary)).toBe(true);
      expect(ours[2]).toBe(null);
      expect(ours.slice(7, 9)).toEqual([true, true]);
      expect(ours[10]).toBe(true);
    } finally {
      plain.disconnect();
      text.disconnect();
      direct.disconnect();
    }
  });

  it('parses a text reply to strings with no Buffer slice and no conversion, a …Buffer reply to slices', async () => {
    const plain = createRedis(server.url);
    const text = createRedis(server.url);
    readRepliesAsText(text);
    const values = Array.from({ length: 100 }, (_, i) => `v${i}-ё`);
    await plain.rpush('many', ...values);
    await text.ping();
    // ioredis calls its utils' `convertBufferToString` through the module object: spied there.
    const utils = requireIoredis('./utils') as { convertBufferToString: (...args: unknown[]) => unknown };
    const slices = async (fn: () => Promise<unknown>) => {
      const spy = vi.spyOn(Buffer.prototype, 'slice');
      const converts = vi.spyOn(utils, 'convertBufferToString');
      try {
        const value = await fn();
        return { value, count: spy.mock.calls.length, converts: converts.mock.calls.length };
      } finally {
        spy.mockRestore();
        converts.mockRestore();
      }
    };
    try {
      const theirs = await slices(() => plain.lrange('many', 0, -1));
      const ours = await slices(() => text.lrange('many', 0, -1));
      const oursBuffer = await slices(() => text.lrangeBuffer('many', 0, -1));
      expect(ours.value).toEqual(values);
      expect(theirs.value).toEqual(values);
      expect(theirs.count).toBeGreaterThanOrEqual(100);
      expect(ours.count).toBe(0);
      // Already text: ioredis's conversion (a copy of the array) skipped; a plain client's runs.
      expect(theirs.converts).toBeGreaterThanOrEqual(1);
      expect(ours.converts).toBe(0);
      expect(oursBuffer.count).toBeGreaterThanOrEqual(100);
      expect((oursBuffer.value as Buffer[]).map(String)).toEqual(values);
    } finally {
      await plain.del('many');
      plain.disconnect();
      text.disconnect();
    }
  });

  it('keeps Buffers in subscriber mode: a message as text and as bytes, as a plain client', async () => {
    const text = createRedis(server.url);
    const publisher = createRedis(server.url);
    readRepliesAsText(text);
    try {
      const got = new Promise<unknown[]>((resolve) => {
        text.on('messageBuffer', (channel: Buffer, message: Buffer) => resolve([channel, message]));
      });
      const asText = new Promise<unknown[]>((resolve) => {
        text.on('message', (channel: string, message: string) => resolve([channel, message]));
      });
      expect(await text.subscribe('канал')).toBe(1);
      await publisher.publish('канал', binary);
      expect(await got).toEqual([Buffer.from('канал'), binary]);
      expect(await asText).toEqual(['канал', binary.toString()]);
      expect(await text.unsubscribe('канал')).toBe(0);
      expect(await text.get('missing')).toBe(null);
    } finally {
      text.disconnect();
      publisher.disconnect();
    }
  });

  it('switches each new socket after Redis restarts; leaves a socket without its listener alone', async () => {
    const text = createRedis(server.url);
    const read = readRepliesAsText(text);
    try {
      await text.set('before', 'é');
      const first = streamOf(text);
      await server.restart();
      expect(await text.get('before')).toBe(null);
      expect(streamOf(text)).not.toBe(first);
      expect(read.switched()).toBe(2);
      expect(await text.set('after', 'ö').then(() => text.get('after'))).toBe('ö');
      // Switched already: DataHandler's listener is gone, nothing to take.
      expect(parseRepliesAsText(text)).toBe(false);
      expect(await text.getBuffer('after')).toEqual(Buffer.from('ö'));
    } finally {
      text.disconnect();
    }
  });
});
