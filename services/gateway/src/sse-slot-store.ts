/**
 * Open event streams per tenant, counted across gateway replicas: a sorted set per tenant of
 * stream id → lease expiry. A stream takes a slot when it opens, renews its lease while it runs and
 * gives it back when it ends; a replica that dies leaves leases that lapse on their own, so a crash
 * never eats a tenant's slots for good.
 */
import { randomBytes } from 'node:crypto';
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';

/** How long a slot is held without renewal, ms (streams renew every few seconds). */
export const SSE_LEASE_MS = 30_000;

// KEYS[1] tenant's set. ARGV: nowMs, leaseMs, limit, streamId. 1 = taken, 0 = full.
const TAKE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[4])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return 1
`;

export interface SseSlot {
  renew(): Promise<void>;
  release(): Promise<void>;
}

export function createSseSlotStore(redis: Redis, limit: number) {
  return {
    /** A slot for one stream of the tenant, or null when the tenant has `limit` open. */
    async take(tenant: string): Promise<SseSlot | null> {
      const key = keys.sseStreams(tenant);
      const id = randomBytes(8).toString('hex');
      const taken = await redis.eval(TAKE, 1, key, Date.now(), SSE_LEASE_MS, limit, id);
      if (Number(taken) !== 1) return null;
      return {
        async renew() {
          await redis
            .multi()
            .zadd(key, 'XX', Date.now() + SSE_LEASE_MS, id)
            .pexpire(key, SSE_LEASE_MS * 2)
            .exec();
        },
        async release() {
          await redis.zrem(key, id);
        },
      };
    },
  };
}

export type SseSlotStore = ReturnType<typeof createSseSlotStore>;
