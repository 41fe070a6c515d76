/**
 * A tenant's own order among its deferred jobs when many are deferred in the same millisecond:
 * the freed slots go to them in the order they were deferred (their fetches', the queue's), not
 * in their ids' text order. The deferred set's score was the whole ms and a tie went by member
 * ("r-100" before "r-99"; with run ids, at random): test/bench/README.md, round 26, `fair-tie`.
 * Deferred back to back in one MULTI, through both ways an acquire gets its time (it reads TIME
 * itself: lease-acquire-6, a worker's fetch; its caller gives the ms: a run's end with the next
 * fetch, the hand-off's add), so most share a millisecond. Real redis-server, the real scripts.
 */
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { onRedisServer } from '../test/test-redis.ts';
import { type FetchedStartTerms, fetchedStartArgs } from './fetched-start-args.ts';
import {
  acquireCall,
  fetchLeaseBeginScript,
  LEASE_ACQUIRE,
  LEASE_RELEASE,
  leaseAnswerOf,
  releaseCall,
} from './lease-scripts.ts';
import { noteQueued } from './pool-demand.ts';

let redis: Redis;
onRedisServer((client) => {
  redis = client;
});
const mode = 'read-only';
const leaseMs = 30_000;
const terms = { mode, share: 0.5, cap: 0, leaseMs };
const on = { ISLET_TENANT_POOL_SHARE: terms.share, ISLET_TENANT_MAX_EXECUTING_PER_POOL: terms.cap };

// A fetch that took the job (BullMQ's answer: its hash's fields, its id, no limit, no delay), with
// the time in whole ms given by the caller as the end's and the hand-off's fused fetches give it
// (here: the start's `nowMs`, the lease's last argument).
const FETCHED = fetchLeaseBeginScript(`return {{'data', ARGV[1]}, ARGV[2], 0, 0}`, 'tonumber(ARGV[12])');
const start: FetchedStartTerms['start'] = (runId) => ({
  streamKey: `test:${runId}:events`,
  maxLen: 100,
  type: 'started',
  sealedData: '{}',
  channel: 'test:wake',
  message: `${runId}:started`,
});
const startTerms: FetchedStartTerms = {
  ...terms,
  journalKey: (runId) => `test:${runId}:journal`,
  runKey: (runId) => `test:${runId}:run`,
  start,
  ttlSeconds: 60,
  nowMs: 0,
};

/** A pool of 4 live slots (a runner's registration) with beta's job queued: acme's share is 2. */
async function contended(): Promise<void> {
  await redis.flushall();
  await redis.hset(keys.poolSlots(mode), 'runner-1', `4:${Date.now() + 600_000}`);
  await noteQueued(redis, on, mode, 'beta');
  for (const id of ['hold-0', 'hold-1']) expect((await acquire(id)).ok).toBe(true);
}

async function acquire(jobId: string) {
  const call = acquireCall({ ...terms, tenant: 'acme', jobId });
  return leaseAnswerOf(await LEASE_ACQUIRE.run(redis, call.keys, call.args));
}

/** Gives a job's slot back; the deferred job the release leased it to, if any. */
async function release(jobId: string): Promise<string | undefined> {
  const call = releaseCall({ ...terms, tenant: 'acme', jobId });
  const next = (await LEASE_RELEASE.run(redis, call.keys, call.args)) as [string, string] | null;
  return next?.[0];
}

describe('jobs of one tenant deferred in the same millisecond', () => {
  it('get the freed slots in the order they were deferred, not in their ids’ text order', async () => {
    await contended();
    // Queue order j-199, j-198, … j-100: the ids' text order is the reverse.
    const queued = Array.from({ length: 100 }, (_, i) => `j-${199 - i}`);
    await redis.script('LOAD', LEASE_ACQUIRE.source);
    await redis.script('LOAD', FETCHED.source);
    const batch = redis.multi();
    queued.forEach((id, i) => {
      if (i % 2 === 0) {
        const call = acquireCall({ ...terms, tenant: 'acme', jobId: id });
        batch.evalsha(LEASE_ACQUIRE.sha, call.keys.length, ...call.keys, ...call.args);
      } else {
        const data = JSON.stringify({ runId: id, tenant: 'acme', enqueuedAtMs: 0 });
        const args = [data, id, ...fetchedStartArgs({ ...startTerms, nowMs: Date.now() })];
        batch.evalsha(FETCHED.sha, 1, 'test:unused', ...args);
      }
    });
    const answers = (await batch.exec()) ?? [];
    // Every one deferred (refused: lease-acquire-6's answer, the fused fetch's fifth element's fourth).
    const refused = answers.map(([err, reply], i) => {
      expect(err).toBeNull();
      const lease = i % 2 === 0 ? reply : ((reply as unknown[])[4] as unknown[])[3];
      return (lease as number[])[0];
    });
    expect(refused).toEqual(queued.map(() => 0));
    // Some in the same millisecond (the case the ids' text order decided: any two tied jobs here
    // are in reverse text order). Usually 5–18 distinct ms; a stalled Redis spreads them more,
    // which only weakens the case, so one tie is all this asks.
    const deferred = keys.poolTenantDeferred(mode, 'acme');
    const scored = await redis.zrange(deferred, 0, -1, 'WITHSCORES');
    const ms = new Set(scored.filter((_, i) => i % 2 === 1).map((s) => Math.floor(Number(s))));
    expect(ms.size).toBeLessThan(queued.length);
    // Each score still a time in ms (an older release writes and reads it so).
    for (let i = 1; i < scored.length; i += 2)
      expect(Math.abs(Number(scored[i]) - Date.now())).toBeLessThan(60_000);
    expect(scored.filter((_, i) => i % 2 === 0)).toEqual(queued);
    // The slots freed one at a time go to acme's deferred jobs in its queue order.
    const granted: string[] = [];
    for (let running: string | undefined = 'hold-0'; running; ) {
      running = await release(running);
      if (running) granted.push(running);
    }
    expect(granted).toEqual(queued);
    expect(await redis.exists(deferred)).toBe(0);
  });

  it('a job deferred again while still in the set keeps its first place', async () => {
    await contended();
    for (const id of ['b', 'a', 'c']) expect((await acquire(id)).ok).toBe(false);
    const deferred = keys.poolTenantDeferred(mode, 'acme');
    const first = await redis.zscore(deferred, 'a');
    // Its recheck fetches it again while its tenant is still at its share: it stays where it was.
    expect((await acquire('a')).ok).toBe(false);
    expect(await redis.zscore(deferred, 'a')).toBe(first);
    expect(await redis.zrange(deferred, 0, -1)).toEqual(['b', 'a', 'c']);
  });

  it('a listed tenant’s deferral costs one TIME and one ZADD whichever way its time came: no more commands than before', async () => {
    await contended();
    expect((await acquire('first')).ok).toBe(false); // acme listed among the waiting tenants now
    for (const script of [LEASE_ACQUIRE, FETCHED]) await redis.script('LOAD', script.source);
    const bySelf = await counted(() => acquire('self'));
    const data = JSON.stringify({ runId: 'given', tenant: 'acme', enqueuedAtMs: 0 });
    const args = ['given', ...fetchedStartArgs({ ...startTerms, nowMs: Date.now() })];
    const byGiven = await counted(() => FETCHED.run(redis, ['test:unused'], [data, ...args]));
    // The tenant's listing (ZADD NX on the waiting list) is not written again: it would write
    // nothing. That pays for the TIME the deferral reads when its time came in whole ms.
    for (const c of [bySelf, byGiven]) {
      expect(c.by.time).toBe(1);
      expect(c.by.zadd).toBe(1);
    }
    // On the base (e04c4af) 12 and 11: its own time read, one TIME and two ZADDs; the caller's, no
    // TIME and two ZADDs. Now 11 both: one fewer, or as many.
    expect(bySelf.total).toBe(11);
    expect(byGiven.total).toBe(11);
    expect(await redis.zrange(keys.poolTenantDeferred(mode, 'acme'), 0, -1)).toEqual([
      'first',
      'self',
      'given',
    ]);
  });
});

/** The commands `fn` made Redis run (a script's own counted, as Redis counts them), by name. */
async function counted(fn: () => Promise<unknown>): Promise<{ by: Record<string, number>; total: number }> {
  const stats = async () =>
    new Map(
      [...(await redis.info('commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)].map((m) => [
        m[1] ?? '',
        Number(m[2]),
      ]),
    );
  const before = await stats();
  await fn();
  const by: Record<string, number> = {};
  let total = 0;
  for (const [name, calls] of await stats()) {
    const n = calls - (before.get(name) ?? 0);
    if (n > 0 && name !== 'info') {
      by[name] = n;
      total += n;
    }
  }
  return { by, total };
}
