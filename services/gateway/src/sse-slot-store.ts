/**
 * Open event streams per API key and per tenant, counted across gateway replicas: a sorted set per
 * key and one per tenant of stream id → lease expiry, both in the tenant's slot and taken in one
 * script. A stream takes a slot when it opens, renews its lease while it runs and gives it back
 * when it ends; a replica that dies leaves leases that lapse on their own, so a crash never eats a
 * key's or a tenant's slots for good. The key's cap keeps one leaking client (or one stolen key)
 * from taking every stream its tenant may open.
 */
import { randomBytes } from 'node:crypto';
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';

/** How long a slot is held without renewal, ms (streams renew every few seconds). */
const SSE_LEASE_MS = 30_000;

// KEYS[1] tenant's set, KEYS[2] key's set. ARGV: nowMs, leaseMs, tenant limit, key limit, streamId.
// 1 = taken, 0 = the tenant is full, -1 = the key is full.
const TAKE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return -1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
local expiry = tonumber(ARGV[1]) + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], expiry, ARGV[5])
redis.call('ZADD', KEYS[2], expiry, ARGV[5])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[2]) * 2)
return 1
`;

export interface SseSlot {
  renew(): Promise<void>;
  release(): Promise<void>;
}

interface SseLimits {
  perTenant: number;
  perKey: number;
}

export function createSseSlots(redis: Redis, limits: SseLimits) {
  return {
    limits,
    /**
     * A slot for one stream of the tenant's key (`keyId`; an internal caller without a key id
     * counts under `-`), or which cap refused it.
     */
    async take(tenant: string, keyId = '-'): Promise<SseSlot | { full: 'tenant' | 'key' }> {
      const tenantKey = keys.sseStreams(tenant);
      const keyKey = keys.sseKeyStreams(tenant, keyId);
      const id = randomBytes(8).toString('hex');
      const taken = Number(
        await redis.eval(
          TAKE,
          2,
          tenantKey,
          keyKey,
          Date.now(),
          SSE_LEASE_MS,
          limits.perTenant,
          limits.perKey,
          id,
        ),
      );
      if (taken === 0) return { full: 'tenant' };
      if (taken === -1) return { full: 'key' };
      return {
        async renew() {
          const expiry = Date.now() + SSE_LEASE_MS;
          await redis
            .multi()
            .zadd(tenantKey, 'XX', expiry, id)
            .pexpire(tenantKey, SSE_LEASE_MS * 2)
            .zadd(keyKey, 'XX', expiry, id)
            .pexpire(keyKey, SSE_LEASE_MS * 2)
            .exec();
        },
        async release() {
          await redis.multi().zrem(tenantKey, id).zrem(keyKey, id).exec();
        },
      };
    },
  };
}

export type SseSlots = ReturnType<typeof createSseSlots>;
