/**
 * Two tenants under contention: a slot a run's end frees and its release leases to a deferred job
 * is filled by that job at once. The fused end + completion promotes the job to the end of the
 * wait list its own fetch pops, so the freeing worker's next job is the reserved one; promoted by
 * the runner afterwards (then BullMQ's promote: the back of the list) it reached a slot 17–29 ms later,
 * the slot empty meanwhile and the jobs fetched before it refused (test/bench/README.md, round 25,
 * `fair-contend`). And a reserved job the runner promotes (not yet delayed when the end ran) is
 * promoted even when its move to delayed lands between the promote and its state read: answered
 * "gone" before, its lease was given on and it waited for its recheck (on the base this test's
 * backlog stalled so in 2 of 4 runs). Real redis-server, real BullMQ, the real runner with its
 * fused scripts; the order read from MONITOR.
 */
import { keys } from '@islet/core';
import { runJobOptions } from '@islet/runs';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { mode, onRunnerHarness, until } from '../test/runner-harness.ts';

let client: Redis;
const h = onRunnerHarness('reserved-promote-test', (up) => {
  ({ redis: client } = up);
});

describe('a slot leased to a deferred job under contention', () => {
  it('is filled by that job through the freeing worker’s own fetch; nothing lost, each tenant in order', async () => {
    const t = await h.setUp('reserved', true, undefined, { noteEnds: true });
    await h.warmUp(t, 'warm');
    // Two tenants' backlog in runs of three (a strict alternation would never find a tenant over
    // its share): each holds its share (2 of 4 slots), its third job in a row is deferred when
    // fetched, and the releases lease freed slots to the deferred jobs in turn.
    const ids = Array.from({ length: 120 }, (_, i) => ({
      id: `r-${i}`,
      tenant: i % 6 < 3 ? 'acme' : 'beta',
    }));
    for (const { id, tenant } of ids) await h.newRun(id, tenant);
    // Counted as queued, as the gateway's add counts each (pool-demand.ts): the share then sees
    // the other tenant waiting before a runner reaches its job.
    for (const { tenant } of ids) await client.hincrby(keys.poolQueued(mode), tenant, 1);
    const mon = await h.monitor();
    try {
      await t.queue.addBulk(
        ids.map(({ id, tenant }) => ({
          name: 'run',
          data: { runId: id, tenant, enqueuedAtMs: Date.now() },
          opts: runJobOptions(id, 1),
        })),
      );
      // The recheck is a minute off (the harness): a deferred job runs only by a release's or a
      // pick-up's promotion, so a lost promotion leaves the queue undrained.
      await until('the backlog to drain', async () => (await t.queue.getCompletedCount()) === ids.length + 1);
    } finally {
      await mon.stop();
    }
    const wait = t.queue.keys.wait;
    const delayed = t.queue.keys.delayed;
    // Promotions: a ZREM from the delayed set, then the push that puts the job back in the wait list;
    // the end's script pushes right after its ZREM, the runner's promote (promote-reserved-6, to the
    // same end since round 27) reads the queue's meta in between.
    const pushes: { how: string; id: string; at: number }[] = [];
    mon.seen.forEach((c, i) => {
      if (c[0] === 'zrem' && c[1] === delayed) {
        const at = mon.seen
          .slice(i + 1)
          .findIndex((n) => n[1] === wait && (n[0] === 'rpush' || n[0] === 'lpush'));
        const next = mon.seen[i + 1 + at];
        if (at >= 0 && next && next[2] === c[2])
          pushes.push({ how: at === 0 ? `${next[0]} in the end` : next[0]!, id: c[2]!, at: i });
      }
    });
    const locks = mon.seen.flatMap((c, i) =>
      c[0] === 'set' && c[1]?.endsWith(':lock') ? [{ key: c[1], at: i }] : [],
    );
    const inScript = pushes.filter((p) => p.how === 'rpush in the end');
    // The share deferred jobs, and their slots were leased and promoted in the end's own script.
    expect(inScript.length).toBeGreaterThan(10);
    expect(inScript.length).toBeGreaterThanOrEqual(pushes.length / 2);
    // Each job promoted there is the next one any worker locks: the freeing worker's fetch took it.
    for (const p of inScript)
      expect(locks.find((l) => l.at > p.at)?.key).toBe(`${t.queue.qualifiedName}:${p.id}:lock`);
    // Nothing lost, nothing left deferred or leased.
    expect(await client.zcard(keys.poolTenantDeferred(mode, 'acme'))).toBe(0);
    expect(await client.zcard(keys.poolTenantDeferred(mode, 'beta'))).toBe(0);
    expect(await client.zcard(keys.poolWaiting(mode))).toBe(0);
    expect(await client.zcard(keys.poolBusy(mode))).toBe(0);
    // A tenant's own order: its jobs were granted their slots (a lease written, by a pick-up or
    // a release's reservation) in the order they were queued, two deferred in the same millisecond
    // included (until round 26 a tie went by the ids' text, "r-100" before "r-99":
    // test/bench/README.md, `fair-tie`).
    for (const tenant of ['acme', 'beta']) {
      const leases = keys.poolTenantLeases(mode, tenant);
      const granted = [
        ...new Set(mon.seen.flatMap((c) => (c[0] === 'zadd' && c[1] === leases ? [c[3]!] : []))),
      ];
      const queued = ids.filter((r) => r.tenant === tenant).map((r) => r.id);
      expect([...granted].sort()).toEqual([...queued].sort());
      const passed = granted.flatMap((id, i) =>
        granted
          .slice(i + 1)
          .filter((older) => queued.indexOf(older) < queued.indexOf(id))
          .map((older) => `${id} before ${older}`),
      );
      expect(passed).toEqual([]);
    }
    await t.close();
  });
});
