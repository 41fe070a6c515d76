import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { healthHour } from './health-buckets.ts';
import { finishTenantCall, usageDay } from './run-index-writes.ts';
import { tenantNames } from './run-store-args.ts';
import { createTenantBytesStore } from './tenant-bytes-store.ts';

const DAY_MS = 24 * 3600 * 1000;

describe("a tenant's names on a submit's and an end's path, made once (core's tenantMemo)", () => {
  it('in-flight, skills, and the admission’s placeholders: the same frozen names, equal to their derivation', () => {
    const first = tenantNames('names-a');
    // Until round 38 (`tidy`) each submit and end built them afresh.
    expect(tenantNames('names-a')).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first).toEqual({
      inFlight: keys.inFlight('names-a'),
      skillsInFlight: keys.skillsInFlight('names-a'),
      noIdempotency: keys.idempotency('names-a', ''),
      noRate: keys.rateWindow('names-a', 0),
    });
    expect(tenantNames('names-b').inFlight).toBe(keys.inFlight('names-b'));
  });

  it('the stored-bytes counters: one list a tenant and bucket, the charge on its last, new names with the next bucket', () => {
    const store = createTenantBytesStore({} as Redis, { retentionSeconds: 800 });
    const bucketMs = 100_000; // 800 s in eight buckets
    const at = 1_700_000_000_000;
    const bucket = Math.floor(at / bucketMs);
    const derived = (b: number) =>
      Array.from({ length: 9 }, (_, i) => keys.storedBytes('bytes-a', b - 8 + i));
    const names = store.usageKeys('bytes-a', at);
    expect(names).toEqual(derived(bucket));
    // Not frozen (a frozen array leaves V8's fast `slice` and `concat`): read-only by its type.
    expect(Object.isFrozen(names)).toBe(false);
    // The same bucket, later in it: the same list (made once), and the charge names its last.
    expect(store.usageKeys('bytes-a', at + 1)).toBe(names);
    const charge = store.chargeArgs('bytes-a', 10.2, at + 2);
    expect(charge.key).toBe(keys.storedBytes('bytes-a', bucket));
    expect(charge.args).toEqual([11, (bucket + 1) * 100 + 800]);
    // The next bucket: its own names.
    const next = store.usageKeys('bytes-a', at + bucketMs);
    expect(next).toEqual(derived(bucket + 1));
    expect(store.chargeArgs('bytes-a', 1, at + bucketMs).key).toBe(keys.storedBytes('bytes-a', bucket + 1));
    // Another tenant in the same bucket: its own.
    expect(store.usageKeys('bytes-b', at)[8]).toBe(keys.storedBytes('bytes-b', bucket));
  });

  it("an end's usage day and health hour: the names of the day and hour it ended in, across their turns", () => {
    const day0 = Date.UTC(2026, 11, 5, 23, 59, 59, 999);
    for (const endedAt of [day0, day0 + 1, day0 + 2, day0 - DAY_MS, day0 + 3600 * 1000]) {
      const call = finishTenantCall('usage-a', tenantNames('usage-a').inFlight, {
        id: 'r1',
        status: 'Completed',
        endedAt,
      });
      expect(call.keys).toContain(keys.usageDay('usage-a', usageDay(endedAt)));
      expect(call.keys).toContain(keys.healthHour('usage-a', healthHour(endedAt)));
      expect(call.keys[0]).toBe(keys.inFlight('usage-a'));
    }
  });
});
