/**
 * How many bytes of Redis a tenant's retained data holds, counted as it is written, so one tenant
 * cannot fill Redis for all (its submits are refused past its share, the others' are not).
 *
 * Data expires with the retention period, silently: so the count is kept in buckets of an eighth
 * of the retention, each expiring one retention after its own end, and a tenant's usage is the sum
 * of the buckets that may still hold live data (nine keys, one slot, one MGET; a submit's is read
 * inside its admission script, run-store.ts). The count errs
 * high by at most one bucket's age: data is counted up to an eighth of the retention longer than
 * it lives, never shorter.
 */

import { keys, tenantMemo } from '@islet/core';
import type { Redis } from 'ioredis';
import { loadScript } from './lua-scripts.ts';

const BUCKETS = 8;

const CHARGE = loadScript('charge-bytes-1');

export function createTenantBytesStore(redis: Redis, options: { retentionSeconds: number }) {
  const bucketSeconds = Math.max(1, Math.ceil(options.retentionSeconds / BUCKETS));
  const bucketOf = (nowMs: number) => Math.floor(nowMs / 1000 / bucketSeconds);
  // A tenant's counters up to a bucket, oldest first, made once a tenant and bucket (core's
  // `tenantMemo`): every submit names all nine and every end the last. Shared, so typed read-only;
  // not frozen: a frozen array leaves V8's fast paths, and the submit's `slice` and `concat` of this
  // one took 3× as long (~0.5 µs more; test/bench/README.md round 38 `tidy`).
  const counters = tenantMemo((tenant, last) => {
    const names: string[] = [];
    for (let b = last - BUCKETS; b <= last; b++) names.push(keys.storedBytes(tenant, b));
    return names as readonly string[];
  });
  return {
    /**
     * The key and arguments of a charge (includes/charge.lua: bytes, then when the counter
     * expires, unix seconds), for a caller that sends it in a script of its own.
     */
    chargeArgs(tenant: string, bytes: number, nowMs = Date.now()) {
      const bucket = bucketOf(nowMs);
      const expiresAt = (bucket + 1) * bucketSeconds + options.retentionSeconds;
      return { key: counters(tenant, bucket)[BUCKETS] as string, args: [Math.ceil(bytes), expiresAt] };
    },
    /** Counts `bytes` more of the tenant's retained data. */
    async charge(tenant: string, bytes: number): Promise<void> {
      if (bytes <= 0) return;
      const { key, args } = this.chargeArgs(tenant, bytes);
      await CHARGE.run(redis, [key], args);
    },
    /**
     * The counters whose sum is the tenant's retained bytes, oldest first: the last is the one a
     * charge at `nowMs` counts in (`chargeArgs`'s key).
     */
    usageKeys(tenant: string, nowMs = Date.now()): readonly string[] {
      return counters(tenant, bucketOf(nowMs));
    },
    /** The tenant's retained bytes (an upper bound, see above). */
    async usage(tenant: string, nowMs = Date.now()): Promise<number> {
      const counts = await redis.mget(...this.usageKeys(tenant, nowMs));
      return counts.reduce((sum, c) => sum + Number(c ?? 0), 0);
    },
    /** Redis's `maxmemory` in bytes (0: none set, or not reported). */
    maxMemoryBytes: () => redisMaxMemoryBytes(redis),
  };
}

export type TenantBytesStore = ReturnType<typeof createTenantBytesStore>;

/** Redis's `maxmemory` in bytes from `INFO memory` (0: none set, or not reported). */
async function redisMaxMemoryBytes(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  const m = /^maxmemory:(\d+)/m.exec(info);
  return m ? Number(m[1]) : 0;
}
