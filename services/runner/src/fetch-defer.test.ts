/**
 * A job whose lease the fused fetch refuses (its tenant at its share while another tenant waits) is
 * moved to the delayed set by that fetch's own script, which then fetches the worker's next job in
 * its place: the worker's slot never holds the refused job (before, it held it 9–15 ms under load
 * until the runner's `moveToDelayed`, a BullMQ slot and lock idle while other jobs waited:
 * test/bench/README.md, round 26, `fair-fetch`). The move is BullMQ's moveToDelayed with
 * skipAttempt, the deferral counted and kept in the tenant's deferred set as before. Real
 * redis-server, real BullMQ, real fair share and run store; calls and their order read from
 * MONITOR, never time. A capped queue falls back to the processor's move.
 */
import { keys } from '@islet/core';
import { noteQueued, runJobOptions } from '@islet/runs';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { gate } from '../test/run-backlog.ts';
import { mode, onRunnerHarness, until } from '../test/runner-harness.ts';
import { createFairShare } from './fair-share.ts';
import { isFetchStartSha } from './fetch-start-store.ts';

let redis: Redis;
const h = onRunnerHarness('fetch-defer-test', (up) => {
  ({ redis } = up);
});
const { logger, newRun, monitor, setUp, warmUp } = h;

describe('a fetch whose lease is refused', () => {
  it('moves the job to delayed in its own script and brings the next job in the same call', async () => {
    // d2 is held between its work and its end, so the pool is read as the fetch left it.
    const g = gate();
    const t = await setUp('defer', true, undefined, { hold: g.held });
    try {
      await warmUp(t, 'warm');
      g.close();
      // acme holds its share (two leases of four slots) while another tenant has work queued.
      const fair = createFairShare({ redis, logger, promote: async () => true, config: t.config });
      for (const id of ['x1', 'x2']) expect((await fair.acquire(mode, 'acme', id)).ok).toBe(true);
      await noteQueued(redis, t.config, mode, 'other');
      await newRun('d1', 'acme');
      await newRun('d2', 'other');
      const record = await redis.hgetall(keys.run('d1'));
      const m = await monitor();
      try {
        // One transaction: both are waiting when the worker wakes, d1 first in line.
        await t.queue.addBulk([
          {
            name: 'run',
            data: { runId: 'd1', tenant: 'acme', enqueuedAtMs: Date.now() },
            opts: runJobOptions('d1', 2),
          },
          {
            name: 'run',
            data: { runId: 'd2', tenant: 'other', enqueuedAtMs: Date.now() },
            opts: runJobOptions('d2', 2),
          },
        ]);
        await until('d2 to be held', async () => g.waiting() === 1);
      } finally {
        await m.stop();
      }
      const q = t.queue.qualifiedName;
      const at = (pred: (c: string[]) => boolean) => m.seen.findIndex(pred);
      const call = at((c) => c[0] === 'evalsha' && isFetchStartSha(c[1]));
      expect(call).toBeGreaterThanOrEqual(0);
      // Inside that one call (no command any client sent in between): d1 locked, refused, its lock
      // deleted, out of the active list and into the delayed set; then d2 popped and locked.
      const end = m.seen.findIndex((c, i) => i > call && m.sent.includes(c));
      const inCall = m.seen.slice(call + 1, end < 0 ? undefined : end);
      const step = (pred: (c: string[]) => boolean) => inCall.findIndex(pred);
      const d1Lock = step((c) => c[0] === 'set' && c[1] === `${q}:d1:lock`);
      const deferred = step(
        (c) => c[0] === 'zadd' && c[1] === keys.poolTenantDeferred(mode, 'acme') && c.includes('d1'),
      );
      const unlocked = step((c) => c[0] === 'del' && c[1] === `${q}:d1:lock`);
      const inactive = step((c) => c[0] === 'lrem' && c[1] === t.queue.keys.active && c[3] === 'd1');
      const delayed = step((c) => c[0] === 'zadd' && c[1] === t.queue.keys.delayed && c[3] === 'd1');
      const d2Lock = step((c) => c[0] === 'set' && c[1] === `${q}:d2:lock`);
      expect([d1Lock, deferred, unlocked, inactive, delayed, d2Lock].every((i) => i >= 0)).toBe(true);
      expect(d1Lock < deferred && deferred < unlocked && unlocked < inactive && inactive < delayed).toBe(
        true,
      );
      expect(delayed).toBeLessThan(d2Lock);
      // No moveToDelayed of the runner's own and no fetch of d2 of its own: each job was locked
      // once, in that call, and d1 moved to delayed once.
      const locked = (id: string) => m.seen.filter((c) => c[0] === 'set' && c[1] === `${q}:${id}:lock`);
      expect(locked('d1')).toHaveLength(1);
      expect(locked('d2')).toHaveLength(1);
      expect(
        m.seen.filter((c) => c[0] === 'zadd' && c[1] === t.queue.keys.delayed && c[3] === 'd1'),
      ).toHaveLength(1);
      // d1 never reached the processor; d2 runs.
      expect(t.outcomes).toEqual(['completed 1']);
      expect(await redis.hget(keys.run('d2'), 'status')).toBe('Running');
      expect(await redis.lrange(`${t.queue.qualifiedName}:active`, 0, -1)).toEqual(['d2']);
      // d1 as the runner's moveToDelayed (skipAttempt) left it: delayed for the recheck, no
      // attempt spent, its run untouched, deferred in its tenant's set, the deferral counted.
      expect(await t.queue.getJobState('d1')).toBe('delayed');
      expect((await t.queue.getJob('d1'))?.attemptsMade).toBe(0);
      expect(await redis.hget(`${q}:d1`, 'delay')).toBe('60000');
      expect(await redis.exists(`${q}:d1:lock`)).toBe(0);
      expect(await redis.hgetall(keys.run('d1'))).toEqual(record);
      expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'd1')).not.toBeNull();
      expect(await redis.zscore(keys.poolTenantLeases(mode, 'acme'), 'd1')).toBeNull();
      const deferrals = await t.metrics.registry.getSingleMetricAsString(
        'islet_tenant_share_deferrals_total',
      );
      expect(deferrals).toMatch(/islet_tenant_share_deferrals_total\{[^}]*mode="read-only"[^}]*\} 1/);
      // d2's end frees its slot, which its release leases to d1 (the pool has room): d1 runs, at
      // its first attempt; nothing lost, nothing left deferred.
      g.open();
      await until('d1 to complete', async () => (await t.queue.getJobState('d1')) === 'completed');
      expect(t.outcomes).toEqual(['completed 1', 'completed 1', 'completed 1']);
      expect(await redis.hget(keys.run('d1'), 'attempts')).toBe('1');
      expect(await redis.zcard(keys.poolTenantDeferred(mode, 'acme'))).toBe(0);
      await fair.close();
    } finally {
      await t.close();
    }
  });
  it('on a concurrency-capped queue is answered as before: the processor moves the job', async () => {
    const t = await setUp('capped', true);
    try {
      await warmUp(t, 'warm-c');
      // BullMQ's global concurrency (the queue's meta), far above what runs here: a capped (or
      // paused) queue's refusal is left to the processor's own BullMQ moveToDelayed, as the end's
      // in-script promotion leaves such a queue's to the runner (round 25).
      await t.queue.setGlobalConcurrency(100);
      const fair = createFairShare({ redis, logger, promote: async () => true, config: t.config });
      for (const id of ['y1', 'y2']) expect((await fair.acquire(mode, 'acme', id)).ok).toBe(true);
      await noteQueued(redis, t.config, mode, 'other');
      await newRun('c1', 'acme');
      await t.add('c1', 'acme', 2);
      await until('c1 to be deferred', async () => t.outcomes.includes('deferred'));
      await until('c1 to be delayed', async () => (await t.queue.getJobState('c1')) === 'delayed');
      expect((await t.queue.getJob('c1'))?.attemptsMade).toBe(0);
      expect(await redis.zscore(keys.poolTenantDeferred(mode, 'acme'), 'c1')).not.toBeNull();
      await fair.close();
    } finally {
      await t.queue.removeGlobalConcurrency().catch(() => undefined);
      await t.close();
    }
  });
});
