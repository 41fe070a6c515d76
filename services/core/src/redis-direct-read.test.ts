/**
 * A connection switched by `readRepliesDirect` reads its replies with no readable-stream push and
 * no tick a read, and gets the same replies: small and large (a reply cut over many reads, which
 * the parser keeps across them), pipelined, errors, a script's; after Redis is restarted the new
 * socket is switched too and the client works on. Real redis-server.
 */
import { Readable } from 'node:stream';
import { countStreamPushes, startRedis } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type Redis } from './redis.ts';
import { readRepliesDirect, readSocketDirect } from './redis-direct-read.ts';

/** Readable-stream pushes on `socket` (by any caller) while `fn` runs. */
async function pushesOn<T>(socket: unknown, fn: () => Promise<T>): Promise<{ value: T; pushes: number }> {
  const counting = countStreamPushes((stream) => stream === socket);
  try {
    return { value: await fn(), pushes: counting.total() };
  } finally {
    counting.stop();
  }
}

const streamOf = (redis: Redis) => (redis as unknown as { stream: unknown }).stream;

describe('readRepliesDirect', () => {
  let server: Awaited<ReturnType<typeof startRedis>>;
  beforeAll(async () => {
    server = await startRedis({ appendOnly: false });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('reads replies with no stream push, the same replies as a plain client', async () => {
    const direct = createRedis(server.url);
    const plain = createRedis(server.url);
    const read = readRepliesDirect(direct);
    try {
      await direct.ping();
      expect(read.switched()).toBe(1);
      const big = 'x'.repeat(3 * 1024 * 1024 + 17);
      await plain.set('big', big);
      const work = async (r: Redis) => {
        const out: unknown[] = [];
        out.push(await r.set('k', 'ключ-☃'), await r.get('k'));
        // A 3 MiB reply arrives over many reads; the parser keeps the part before each next one.
        out.push((await r.get('big'))?.length, (await r.getBuffer('big'))?.equals(Buffer.from(big)));
        // Pipelined: several replies in one read, in order.
        out.push(await Promise.all(Array.from({ length: 50 }, (_, i) => r.incr(`n${i % 3}`))));
        out.push(await r.eval('return {KEYS[1], ARGV[1], 42}', 1, 'a', 'b'));
        out.push(
          await r
            .hset('h', 'f', '1')
            .then(() => r.get('h'))
            .catch((e: Error) => e.message),
        );
        return out;
      };
      const plainSocket = streamOf(plain);
      const theirs = await pushesOn(plainSocket, () => work(plain));
      await plain.del('n0', 'n1', 'n2', 'h');
      const socket = streamOf(direct);
      const ours = await pushesOn(socket, () => work(direct));
      expect(ours.value).toEqual(theirs.value);
      expect(theirs.pushes).toBeGreaterThan(0);
      expect(ours.pushes).toBe(0);
      expect(read.switched()).toBe(1);
    } finally {
      direct.disconnect();
      plain.disconnect();
    }
  });

  it("switches each new socket after Redis restarts, and the client's commands go on", async () => {
    const direct = createRedis(server.url);
    const read = readRepliesDirect(direct);
    try {
      await direct.set('before', '1');
      const first = streamOf(direct);
      await server.restart();
      // Reconnected (retryStrategy) on a new socket, switched at its `connect`.
      expect(await direct.get('before')).toBe(null);
      const second = streamOf(direct);
      expect(second).not.toBe(first);
      expect(read.switched()).toBe(2);
      const { value, pushes } = await pushesOn(second, () =>
        direct.set('after', '2').then(() => direct.get('after')),
      );
      expect(value).toBe('2');
      expect(pushes).toBe(0);
    } finally {
      direct.disconnect();
    }
  });

  it('leaves a socket that is no plain net.Socket, or one switched already, as it is', async () => {
    expect(readSocketDirect(undefined)).toBe(false);
    expect(readSocketDirect(new Readable({ read() {} }))).toBe(false);
    const direct = createRedis(server.url);
    try {
      await direct.ping();
      expect(readSocketDirect(streamOf(direct))).toBe(true);
      expect(readSocketDirect(streamOf(direct))).toBe(false);
      expect(await direct.ping()).toBe('PONG');
    } finally {
      direct.disconnect();
    }
  });
});
