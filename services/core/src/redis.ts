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

/**
 * What makes this Redis unsafe for queued runs: AOF off (a restart loses every acknowledged run
 * since the last snapshot) or an eviction policy other than noeviction (a full Redis drops job
 * keys). Undefined when the server does not allow CONFIG (some managed Redis): unknown, not safe.
 */
export async function redisDurabilityProblems(redis: Redis): Promise<string[] | undefined> {
  try {
    const aof = ((await redis.config('GET', 'appendonly')) as string[])[1];
    const policy = ((await redis.config('GET', 'maxmemory-policy')) as string[])[1];
    const problems: string[] = [];
    if (aof !== 'yes') problems.push(`appendonly is ${aof ?? 'unknown'}, not yes`);
    if (policy !== 'noeviction') problems.push(`maxmemory-policy is ${policy ?? 'unknown'}, not noeviction`);
    return problems;
  } catch {
    return undefined;
  }
}
