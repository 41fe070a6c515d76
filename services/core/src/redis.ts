import { Redis, type RedisOptions } from 'ioredis';
import { type RedisTarget, redisOptionsFor } from './redis-connection.ts';

/**
 * A Redis connection configured the way BullMQ asks (`maxRetriesPerRequest: null`) and that
 * keeps reconnecting after a Redis restart instead of giving up, so processes outlive it.
 */
export function createRedis(target: RedisTarget, options: RedisOptions = {}): Redis {
  // Every service connects through redis-connection.ts: one configuration, one topology.
  return new Redis({
    ...redisOptionsFor(target),
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(50 * times, 2000),
    ...options,
  });
}

export type { Redis };

/**
 * BullMQ needs `maxmemory-policy noeviction` (an evicted job key loses a run). Returns the policy,
 * or undefined when the server does not allow CONFIG (some managed Redis); callers warn.
 */
export async function evictionPolicy(redis: Redis): Promise<string | undefined> {
  try {
    const res = (await redis.config('GET', 'maxmemory-policy')) as string[];
    return res[1];
  } catch {
    return undefined;
  }
}
