/** Whether Redis answers, for `/readyz`. */
import type { Redis } from 'ioredis';

export function createRedisProbeStore(redis: Redis) {
  return {
    /** Resolves when Redis answers a PING; throws when it does not. */
    async ping(): Promise<void> {
      // Commands queue while Redis is away; answer not-ready at once instead of hanging the probe.
      if (redis.status !== 'ready') throw new Error(`redis ${redis.status}`);
      await redis.ping();
    },
  };
}

export type RedisProbeStore = ReturnType<typeof createRedisProbeStore>;
