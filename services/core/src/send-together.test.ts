import { type RedisServer, startRedis } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRedis, type Redis, sendTogether } from './redis.ts';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis({ appendFsync: 'always' });
  redis = createRedis(server.url);
  await redis.ping();
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** The socket's write calls while `send` runs and its turn ends: how many, and the chunks of each. */
async function writesOf(send: () => Promise<unknown>[]): Promise<{ calls: number[]; results: unknown[] }> {
  const socket = (redis as unknown as { stream: { _write: unknown; _writev: unknown } }).stream;
  const one = vi.spyOn(socket as { _write: (...a: unknown[]) => void }, '_write');
  const many = vi.spyOn(socket as { _writev: (...a: unknown[]) => void }, '_writev');
  try {
    const results = await Promise.all(send());
    const calls = [...one.mock.calls.map(() => 1), ...many.mock.calls.map((c) => (c[0] as unknown[]).length)];
    return { calls, results };
  } finally {
    one.mockRestore();
    many.mockRestore();
  }
}

describe('sendTogether', () => {
  it("sends a turn's commands, those of its promise chain included, in one write, in order", async () => {
    const { calls, results } = await writesOf(() =>
      sendTogether(redis, () => [
        redis.set('together:a', '1'),
        // As a BullMQ add behind a script: sent after awaits that need no I/O.
        (async () => {
          await Promise.resolve();
          await Promise.resolve();
          return redis.incr('together:a');
        })(),
        redis.get('together:a'),
      ]),
    );
    expect(calls).toEqual([3]);
    expect(results).toEqual(['OK', 2, '1']);
  });

  it('without it each command is a write of its own', async () => {
    const { calls } = await writesOf(() => [redis.set('together:b', '1'), redis.incr('together:b')]);
    expect(calls).toEqual([1, 1]);
  });

  it('uncorks even when its function throws', async () => {
    expect(() =>
      sendTogether(redis, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    await new Promise((r) => process.nextTick(r));
    expect((redis as unknown as { stream: { writableCorked: number } }).stream.writableCorked).toBe(0);
    expect(await redis.ping()).toBe('PONG');
  });
});
