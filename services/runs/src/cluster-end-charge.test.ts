/**
 * A Cluster's run end: after the record's transition (the run's slot), the tenant half and the bytes
 * the end stored go as one tenant-slot script (finish-tenant-charge-10), not two sent together
 * (finish-tenant-9 and charge-bytes-1 until round 52). On a slot-checking node (cluster mode, one
 * node: the store takes its Cluster path and a cross-slot script fails with CROSSSLOT), counted
 * by `INFO commandstats`: what the end writes is what the two scripts wrote.
 */

import { createRedis, keys } from '@islet/core';
import { runFixture, startSlotCheckingRedis } from '@islet/testkit';
import { onRedisClients } from '@islet/testkit/redis-clients';
import { describe, expect, it } from 'vitest';
import { createTestSealer } from '../test/test-sealer.ts';
import { FINISH_TENANT, FINISH_TENANT_CHARGE } from './run-index-scripts.ts';
import { finishTenantCall } from './run-index-writes.ts';
import { createRunStore } from './run-store.ts';
import { createTenantBytesStore } from './tenant-bytes-store.ts';

const sealer = createTestSealer();
let seq = 0;
const RETENTION_SECONDS = 64;
/** The charge's counter for an end now (tenant-bytes-store.ts: eight buckets a retention). */
const counterOf = (tenant: string) =>
  keys.storedBytes(tenant, Math.floor(Date.now() / 1000 / (RETENTION_SECONDS / 8)));

const end = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 'x'.repeat(300), logs: [] },
  text: `"${'x'.repeat(300)}"`,
};

describe("a Cluster's run end", () => {
  const node = onRedisClients(startSlotCheckingRedis, (n) => createRedis(n.url));

  /**
   * Script calls run (EVALSHA + EVAL; a NOSCRIPT EVALSHA, resent as EVAL, is a failed call) and
   * INCRBYs (a script's own counted too) so far.
   */
  const counts = async () => {
    const stats = await node.redis.info('commandstats');
    const calls = (name: string) => {
      const line = new RegExp(`^cmdstat_${name}:calls=(\\d+).*failed_calls=(\\d+)`, 'm').exec(stats);
      return Number(line?.[1] ?? 0) - Number(line?.[2] ?? 0);
    };
    return { scripts: calls('evalsha') + calls('eval'), incrby: calls('incrby') };
  };

  it('sends the tenant half and the bytes charge as one script; the bytes counted whoever won', async () => {
    const redis = node.redis;
    const runs = createRunStore(redis, sealer, { retentionSeconds: RETENTION_SECONDS });
    const tenant = `t-${process.pid}-${seq++}`;
    const run = runFixture(`run-${process.pid}-${seq++}`, { tenant, session: 's1' });
    await runs.create(run, { maxInFlight: 4, sessionTtlSeconds: 60 });
    expect(await runs.inFlightCount(tenant)).toBe(1);
    const counter = counterOf(tenant);
    const pending = await redis.llen(keys.indexPending(tenant));
    const before = await counts();
    expect(await runs.finish(run, end)).toBe(true);
    const after = await counts();
    // The record's transition and the tenant's one script: two calls (three before round 52).
    expect(after.scripts - before.scripts).toBe(2);
    expect(after.incrby - before.incrby).toBe(1);
    expect(await runs.inFlightCount(tenant)).toBe(0);
    expect(await redis.llen(keys.indexPending(tenant))).toBe(pending + 1);
    const charged = Number(await redis.get(counter));
    expect(charged).toBeGreaterThan(300);
    const ttl = await redis.ttl(counter);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(RETENTION_SECONDS * 2);
    // An end that lost (the record final already): the index records nothing, the bytes are counted.
    const lost = await counts();
    expect(await runs.finish(run, { ...end, status: 'Cancelled' })).toBe(false);
    expect(await redis.llen(keys.indexPending(tenant))).toBe(pending + 1);
    expect(Number(await redis.get(counter))).toBeGreaterThan(charged);
    expect((await counts()).scripts - lost.scripts).toBe(2);
  });

  it("writes the tenant half when the charge fails, as the charge's own failure was left", async () => {
    const redis = node.redis;
    const runs = createRunStore(redis, sealer, { retentionSeconds: RETENTION_SECONDS });
    const tenant = `t-${process.pid}-${seq++}`;
    const run = runFixture(`run-${process.pid}-${seq++}`, { tenant, session: 's1' });
    await runs.create(run, { maxInFlight: 4, sessionTtlSeconds: 60 });
    // A counter INCRBY cannot count (a hash): the charge errs inside the script.
    const counter = counterOf(tenant);
    await redis.hset(counter, 'not', 'a counter');
    const pending = await redis.llen(keys.indexPending(tenant));
    expect(await runs.finish(run, end)).toBe(true);
    expect(await runs.inFlightCount(tenant)).toBe(0);
    expect(await redis.llen(keys.indexPending(tenant))).toBe(pending + 1);
    expect(await redis.hget(counter, 'not')).toBe('a counter');
  });

  it("writes what the previous release's two scripts write, key by key (both formats)", async () => {
    const redis = node.redis;
    const bytesStore = createTenantBytesStore(redis, { retentionSeconds: RETENTION_SECONDS });
    const tenant = `t-${process.pid}-${seq++}`;
    const inFlight = keys.inFlight(tenant);
    const endedAt = Date.now();
    const charge = bytesStore.chargeArgs(tenant, 1234, endedAt);
    /** Every key the end writes, as read back (the feed's entries without their stream ids). */
    const snapshot = async () => {
      const feed = await redis.xrange(keys.tenantFeed(tenant), '-', '+');
      return {
        inFlight: await redis.zrange(inFlight, 0, -1, 'WITHSCORES'),
        pending: await redis.lrange(keys.indexPending(tenant), 0, -1),
        feed: feed.map(([, fields]) => fields),
        counter: await redis.get(charge.key),
        expiry: await redis.expiretime(charge.key),
      };
    };
    for (const format of ['1', '2'] as const) {
      for (const status of ['Completed', ''] as const) {
        const seen = [];
        for (const joined of [false, true]) {
          await redis.del(inFlight, keys.indexPending(tenant), keys.tenantFeed(tenant), charge.key);
          await redis.zadd(inFlight, endedAt - 5, 'run-1', endedAt - 4, 'run-2');
          const call = finishTenantCall(
            tenant,
            inFlight,
            { id: 'run-1', status: 'Completed', endedAt, kind: 'none', usage: { outputBytes: 12, cpuMs: 3 } },
            format,
          );
          call.args[1] = status;
          if (joined)
            await FINISH_TENANT_CHARGE.run(
              redis,
              call.keys.concat(charge.key),
              (call.args as (string | number)[]).concat(charge.args),
            );
          else
            await Promise.all([
              FINISH_TENANT.run(redis, call.keys, call.args),
              bytesStore.charge(tenant, 1234),
            ]);
          seen.push(await snapshot());
        }
        expect(seen[1], `format ${format}, status '${status}'`).toEqual(seen[0]);
        expect(seen[1]?.counter).toBe('1234');
        expect(seen[1]?.inFlight).toEqual(['run-2', String(endedAt - 4)]);
        expect(seen[1]?.pending).toHaveLength(status ? 1 : 0);
      }
    }
  });
});
