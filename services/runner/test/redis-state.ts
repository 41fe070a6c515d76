/**
 * A whole Redis's state for tests that run one step two ways from the same state (a baked script
 * and its unbaked text: baked-fetch.test.ts, end-start-baked.test.ts) and compare what each left.
 */
import type { Redis } from 'ioredis';

/** Every key and its content (hash fields sorted; a TTL as whether there is one). */
export async function redisState(redis: Redis): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await redis.keys('*')).sort()) {
    const type = await redis.type(key);
    const ttl = (await redis.pttl(key)) > 0;
    let value: unknown;
    if (type === 'string') value = await redis.get(key);
    else if (type === 'hash') value = Object.entries(await redis.hgetall(key)).sort();
    else if (type === 'list') value = await redis.lrange(key, 0, -1);
    else if (type === 'set') value = (await redis.smembers(key)).sort();
    else if (type === 'zset') value = await redis.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'stream') value = await redis.xrange(key, '-', '+');
    out[key] = { type, ttl, value };
  }
  return out;
}

/** Redis's clock as the scripts read it (13-digit ms, a stream id's): the one difference allowed. */
export const clockless = (v: unknown) => JSON.stringify(v).replace(/\d{13}(-\d+)?(\.\d+)?/g, 'T');

export type RedisSnapshot = [string, number, Buffer][];

/** Every key's DUMP and remaining TTL. */
export async function snapshot(redis: Redis): Promise<RedisSnapshot> {
  const out: RedisSnapshot = [];
  for (const key of await redis.keys('*')) {
    const dump = await redis.dumpBuffer(key);
    if (dump) out.push([key, Math.max(0, await redis.pttl(key)), dump]);
  }
  return out;
}

/** Redis back to `snap`, its script cache flushed (the next call of a script finds it absent). */
export async function restore(redis: Redis, snap: RedisSnapshot): Promise<void> {
  await redis.flushall();
  await redis.script('FLUSH');
  for (const [key, ttl, dump] of snap) await redis.restore(key, ttl, dump);
}
