import { type RedisServer, startRedis } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from './redis.ts';
import { createSettingsCache } from './settings-cache.ts';
import { createSettingsStore } from './settings-store.ts';

let server: RedisServer;
const opened: Redis[] = [];
const connect = (url = server.url) => {
  const c = createRedis(url);
  c.on('error', () => undefined);
  opened.push(c);
  return c;
};
const until = async (what: () => Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const c of opened) c.disconnect();
  await server?.stop();
});

describe('settings cache', () => {
  it('serves reads from one Redis read, and sees another process change at once', async () => {
    const redis = connect();
    const commands = connect();
    const reads = () =>
      commands.info('commandstats').then((s) => Number(/^cmdstat_hmget:calls=(\d+)/m.exec(s)?.[1] ?? 0));
    const cache = createSettingsCache(createSettingsStore(redis), connect(), { maxAgeMs: 60_000 });
    // Another replica's store: it changes the settings, the cache hears it over pub/sub.
    const other = createSettingsStore(connect());
    // Until it listens (the subscribe is asynchronous) it reads through: wait for two hits in a row.
    await until(async () => {
      const start = await reads();
      await cache.get();
      await cache.get();
      return (await reads()) === start;
    });
    const before = await reads();
    const initial = (await cache.get()).codeMode.enabled;
    for (let i = 0; i < 20; i++) expect((await cache.get()).codeMode.enabled).toBe(initial);
    expect((await reads()) - before).toBeLessThanOrEqual(1);

    const res = await other.update(1, { enabled: !initial });
    expect(res.ok).toBe(true);
    await until(async () => (await cache.get()).codeMode.enabled === !initial, 2000);
    expect((await cache.get()).version).toBe(2);
  });

  it('never serves a value older than maxAgeMs, and reads through while its subscriber is down', async () => {
    const redis = connect();
    const subscriber = connect();
    const cache = createSettingsCache(createSettingsStore(redis), subscriber, { maxAgeMs: 200 });
    await until(async () => (await cache.get()).version >= 1);
    const v = (await cache.get()).version;
    // A change whose message this cache never gets (written around the CAS script: no publish).
    await redis.hset('islet:settings', 'version', String(v + 10));
    await until(async () => (await cache.get()).version === v + 10, 2000);

    subscriber.disconnect();
    await until(async () => subscriber.status === 'end');
    await redis.hset('islet:settings', 'version', String(v + 20));
    expect((await cache.get()).version).toBe(v + 20);
  });

  it('peek gives what get would from the cache once its read came back; nothing before, after a change or past maxAgeMs', async () => {
    const redis = connect();
    const cache = createSettingsCache(createSettingsStore(redis), connect(), { maxAgeMs: 60_000 });
    // Until it listens nothing is cached (and nothing peeked).
    await until(async () => {
      await cache.get();
      return cache.peek() !== undefined;
    });
    const read = await cache.get();
    expect(cache.peek()).toBe(read);
    // Another replica's change: dropped on its message, then the read in flight is not peeked.
    const res = await createSettingsStore(connect()).update(read.version, {
      enabled: !read.codeMode.enabled,
    });
    expect(res.ok).toBe(true);
    await until(async () => cache.peek() === undefined, 2000);
    const reading = cache.get();
    expect(cache.peek()).toBeUndefined();
    const next = await reading;
    expect(next.version).toBe(read.version + 1);
    expect(cache.peek()).toBe(next);
    // Its own update drops it too.
    await cache.update(next.version, { enabled: read.codeMode.enabled });
    expect(cache.peek()).toBeUndefined();

    const short = createSettingsCache(createSettingsStore(redis), connect(), { maxAgeMs: 50 });
    await until(async () => {
      await short.get();
      return short.peek() !== undefined;
    });
    await new Promise((r) => setTimeout(r, 80));
    expect(short.peek()).toBeUndefined();
  });
});
