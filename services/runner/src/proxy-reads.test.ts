/**
 * A runner's hot Redis calls read the ioredis client behind BullMQ's Proxy of it, not through the
 * Proxy (core's raw-client.ts; round 51 `runner-cpu`): the Proxy's `get` trap is BullMQ's
 * `Reflect.get(target, prop, target)`, counted here by a spy on `Reflect.get`. A script call, the
 * hand-off's registration and pop, and the replies' DataHandler on a text-parsed connection read
 * the client directly; a spy set through the Proxy is still the one called. A worker's
 * `waitUntilReady`, awaited by every job's completion, answers without resolving a promise with the
 * Proxy (V8 reads a thenable's `then`). Real redis-server.
 */
import { createRedis, rawClient, readRepliesAsText } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { handOffKeys } from '@islet/runs';
import { startRedis } from '@islet/testkit';
import { createIORedisClient } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { mode } from '../test/runner-harness.ts';
import { registerAndPop } from './handoff-store.ts';
import { ParkingWorker } from './parking-worker.ts';

const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;
const ECHO = new LuaScript('return ARGV[1]');

let server: Awaited<ReturnType<typeof startRedis>>;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** The Proxy's reads of `raw` (BullMQ's trap passes the target as the receiver) while `body` runs. */
async function proxyReads<T>(raw: object, body: () => Promise<T>): Promise<{ value: T; reads: string[] }> {
  const reads: string[] = [];
  const get = Reflect.get;
  vi.spyOn(Reflect, 'get').mockImplementation((target: object, prop: PropertyKey, receiver?: unknown) => {
    // BullMQ's trap (its file in the stack), not another reader of the same shape.
    if (target === raw && receiver === raw && new Error().stack?.includes('ioredis-client.js'))
      reads.push(String(prop));
    return get(target, prop, receiver);
  });
  try {
    return { value: await body(), reads };
  } finally {
    vi.mocked(Reflect.get).mockRestore();
  }
}

describe("BullMQ's Proxy of a runner's client", () => {
  it('is seen through: the client behind it; a client, a plain Proxy and a double are themselves', () => {
    const raw = createRedis(server.url, { lazyConnect: true });
    try {
      const proxy = createIORedisClient(raw) as unknown as Redis;
      expect(proxy).not.toBe(raw);
      expect(rawClient(proxy)).toBe(raw);
      expect(rawClient(raw)).toBe(raw);
      const plain = new Proxy(raw, {});
      expect(rawClient(plain)).toBe(plain);
      const double = { sendCommand: () => undefined };
      expect(rawClient(double)).toBe(double);
      // Nothing was listened to, or left listening, by the look.
      expect(raw.eventNames().filter((name) => typeof name === 'symbol')).toEqual([]);
    } finally {
      raw.disconnect();
    }
  });

  it("a script call makes no read through it, and a spy set through it sees the call's command", async () => {
    const raw = createRedis(server.url);
    try {
      const proxy = createIORedisClient(raw) as unknown as Redis;
      await ECHO.run(proxy, [], ['warm']);
      const { value, reads } = await proxyReads(raw, () => ECHO.run(proxy, [], ['x']));
      expect(value).toBe('x');
      expect(reads).toEqual([]);
      const sent: string[] = [];
      const send = proxy.sendCommand.bind(proxy);
      proxy.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
        sent.push(command.name);
        return (send as (...all: unknown[]) => unknown)(command, ...rest);
      }) as typeof proxy.sendCommand;
      try {
        expect(await ECHO.run(proxy, [], ['y'])).toBe('y');
      } finally {
        proxy.sendCommand = send;
      }
      expect(sent).toEqual(['evalsha']);
    } finally {
      raw.disconnect();
    }
  });

  it("the hand-off's registration and pop, and a text-parsed connection's replies, make no read through it", async () => {
    const raw = createRedis(server.url);
    const other = createRedis(server.url);
    try {
      const proxy = createIORedisClient(raw) as unknown as Redis;
      await raw.ping();
      expect(readRepliesAsText(proxy).switched()).toBe(1);
      const own = handOffKeys(prefix, 'w1');
      const keys = [own.idle, own.idleArgs, own.handOff, own.closed] as [string, string, string, string];
      const marker = `${prefix}marker`;
      const pop = () =>
        registerAndPop(
          proxy as unknown as Parameters<typeof registerAndPop>[0],
          keys,
          'w1',
          'terms',
          60_000,
          marker,
          5,
        );
      // A marker waiting: the registration is made and the pop served it at once.
      await other.zadd(marker, 0, '0');
      await pop();
      await other.zadd(marker, 0, '0');
      const { value, reads } = await proxyReads(raw, pop);
      expect(value.marker?.[0]).toBe(marker);
      expect(reads).toEqual([]);
    } finally {
      raw.disconnect();
      other.disconnect();
    }
  });

  it("a ready worker's waitUntilReady answers the blocking client's promise, reading nothing through it", async () => {
    const worker = new ParkingWorker(`proxy-reads-${Date.now()}`, async () => undefined, {
      connection: { host: '127.0.0.1', port: server.port },
      autorun: false,
    });
    try {
      const blocking = await worker.waitUntilReady();
      const raw = rawClient(blocking as unknown as Redis);
      expect(raw).not.toBe(blocking);
      // The pair is kept once both promises were seen fulfilled, a turn after the first answer.
      await new Promise((r) => setImmediate(r));
      const { value, reads } = await proxyReads(raw, () => worker.waitUntilReady());
      expect(value).toBe(blocking);
      expect(reads).toEqual([]);
    } finally {
      await worker.close();
    }
  });
});
