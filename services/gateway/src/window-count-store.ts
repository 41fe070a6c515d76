/**
 * Per-window counters shared by every replica: a tenant's requests per minute (rate limit) and an
 * address's failed authentications per minute. A counter lives as long as its window.
 */
import { countInWindowLua, LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';

// KEYS[1] a per-minute counter.
const COUNT_IN_WINDOW = new LuaScript(`${countInWindowLua('KEYS[1]', 'n')}return n`);

export function createWindowCountStore(redis: Redis) {
  return {
    /** Counts one more in the window's counter (`key`); returns the new count. */
    async count(key: string): Promise<number> {
      return Number(await COUNT_IN_WINDOW.run(redis, [key], []));
    },
    /** The window's count so far, without counting. */
    async read(key: string): Promise<number> {
      return Number((await redis.get(key)) ?? 0);
    },
  };
}

export type WindowCountStore = ReturnType<typeof createWindowCountStore>;
