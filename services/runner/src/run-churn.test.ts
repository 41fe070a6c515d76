/**
 * A run's own bookkeeping on a runner made without per-run churn (round 47 `runner-cpu`), read as
 * counts and identities, never times: the metrics' immediates shared by a turn (afterward.ts), a
 * slot that never parks makes no promise for its lease's order (run-slot.ts), a parked run's lease
 * failure still logged with no `onError` closure (run-processing.ts' `ShareLease`), and the fair
 * share's leases of two runs share their methods (run-lease-of.ts) and behave as before.
 */
import { createHook } from 'node:async_hooks';
import { createLogger } from '@islet/core';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { afterward, afterwardTurns } from './afterward.ts';
import { createFairShare } from './fair-share.ts';
import { RunSlot } from './run-slot.ts';
import { SlotGate } from './slot-gate.ts';

const turn = () => new Promise((r) => setImmediate(r));

describe('afterward', () => {
  it('runs every piece queued in one turn after that turn, in order, from one immediate', async () => {
    const seen: number[] = [];
    const before = afterwardTurns();
    const spy = vi.spyOn(globalThis, 'setImmediate');
    try {
      for (let i = 0; i < 5; i++) afterward(() => seen.push(i));
      expect(seen).toEqual([]);
      // One a run per piece before (a run queued two).
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
    await turn();
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(afterwardTurns() - before).toBe(1);
  });

  it('leaves what queued work queues to the next turn', async () => {
    const seen: string[] = [];
    afterward(() => {
      seen.push('first');
      afterward(() => seen.push('queued by first'));
    });
    await turn();
    expect(seen).toEqual(['first']);
    await turn();
    expect(seen).toEqual(['first', 'queued by first']);
  });
});

describe('RunSlot', () => {
  it('makes no promise for a run that never parks (its lease order begins at its first park)', () => {
    let promises = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'PROMISE') promises++;
      },
    }).enable();
    const lease = { release: async () => {}, reclaim: async () => {}, hold: () => {} };
    try {
      const gate = new SlotGate({ slots: 1, parkedMax: 1, isolatesMax: 1 });
      promises = 0;
      const slot = new RunSlot(gate, lease);
      slot.end();
    } finally {
      hook.disable();
    }
    expect(promises).toBe(0);
  });

  it("logs a parked run's failed lease change through the lease when given no onError", async () => {
    const failures: unknown[] = [];
    const lease = {
      release: () => Promise.reject(new Error('release failed')),
      reclaim: async () => {},
      hold: () => {},
      failed: (err: unknown) => failures.push(err),
    };
    const gate = new SlotGate({ slots: 1, parkedMax: 1, isolatesMax: 1 });
    const slot = new RunSlot(gate, lease);
    await slot.take();
    expect(slot.park(() => undefined)).toBe(true);
    await turn();
    expect(failures.map((e) => (e as Error).message)).toEqual(['release failed']);
    slot.end();
  });
});

describe("the fair share's run leases", () => {
  it('share their methods between runs and keep each run its own answer, hold and release', async () => {
    const redis = new Redis({ lazyConnect: true });
    const share = createFairShare({
      redis,
      logger: createLogger({ name: 'run-churn-test', level: 'silent' }),
      promote: async () => true,
      config: {
        ISLET_RUNNER_CONCURRENCY: 2,
        ISLET_RUNNER_NAME: undefined,
        ISLET_TENANT_POOL_SHARE: 0.5,
        ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0,
        ISLET_TENANT_SHARE_LEASE_MS: 30_000,
      },
    });
    try {
      const begun = ['fetch answer'];
      const a = share.fetchedLease('read-only', 't1', 'job-a', begun);
      const b = share.fetchedLease('read-only', 't2', 'job-b', undefined);
      if (!a || !b) throw new Error('fair share off');
      // One function for every run's lease (closures a run before).
      expect(a.acquired).toBe(b.acquired);
      expect(a.released).toBe(b.released);
      expect(a.held).toBe(b.held);
      expect(a).toMatchObject({ mode: 'read-only', tenant: 't1', jobId: 'job-a', share: 0.5, cap: 0 });
      expect(a.leaseMs).toBe(30_000);
      expect(a.begun).toBe(begun);
      expect(b.begun).toBeUndefined();
      a.acquired({ ok: true, limit: 1 });
      b.acquired({ ok: false, limit: 1 });
      expect(a.answer).toEqual({ ok: true, limit: 1 });
      expect([a.held(), b.held()]).toEqual([true, false]);
      a.released(undefined);
      expect([a.held(), a.endReleased, b.endReleased]).toEqual([false, true, false]);
    } finally {
      await share.close();
      redis.disconnect();
    }
  });
});
