/**
 * A run's own bookkeeping on a runner made without per-run churn (round 47 `runner-cpu`), read as
 * counts and identities, never times: the metrics' immediates shared by a turn (afterward.ts), a
 * slot that never parks makes no promise for its lease's order (run-slot.ts), a parked run's lease
 * failure still logged with no `onError` closure (run-processing.ts' `ShareLease`), and the fair
 * share's leases of two runs share their methods (run-lease-of.ts) and behave as before, and an
 * executor takes a run's stage stamps only where its store keeps them (`stageTimings`).
 */
import { createHook } from 'node:async_hooks';
import { createLogger, createMetrics, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import type { Engine } from '@islet/engine';
import { createCallJournal, createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { onRedisServer } from '../../runs/test/test-redis.ts';
import { completed } from '../test/executor-fakes.ts';
import { afterward, afterwardTurns } from './afterward.ts';
import { createFairShare } from './fair-share.ts';
import type { GatewayClient } from './gateway-client.ts';
import { createRunExecutor } from './run-executor.ts';
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

describe("the executor's stage stamps", () => {
  let redis: Redis;
  onRedisServer(
    (client) => {
      redis = client;
    },
    { appendOnly: false },
  );

  it('are taken only where the run store keeps them: none given to the end with stageTimings false', async () => {
    const engine = {
      execute: async () => completed(),
    } as unknown as Engine;
    const signal = new AbortController().signal;
    const request = {
      connections: [] as string[],
      bindings: [] as never[],
      limits: { timeoutMs: 5000, memoryMb: 64, outputBytes: 65_536, outputCap: 'shared' as const },
    };
    const given = new Map<string, unknown>();
    for (const [id, stageTimings] of [
      ['stamps-on', true],
      ['stamps-default', undefined],
      ['stamps-off', false],
    ] as const) {
      const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
      const runs = createRunStore(redis, sealer, { stageTimings: stageTimings !== false });
      const finish = runs.finish.bind(runs);
      runs.finish = (run, end) => {
        given.set(run.id, end.timings);
        return finish(run, end);
      };
      const executor = createRunExecutor({
        runs,
        settings: { get: async () => ({}) } as never,
        journal: createCallJournal({ redis, sealer }),
        engineFor: () => engine,
        gateway: {} as GatewayClient,
        metrics: createMetrics({ component: id, defaults: false }),
        logger: createLogger({ name: id, level: 'silent' }),
        ...(stageTimings === undefined ? {} : { stageTimings }),
      });
      await runs.create(runFixture(id, { code: 'return 1', request }));
      const job = {
        runId: id,
        mode: 'read-only' as const,
        enqueuedAtMs: Date.now(),
        cancel: signal,
        handBack: signal,
      };
      expect(await executor.execute(job)).toBe('completed');
      expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
    }
    for (const id of ['stamps-on', 'stamps-default'])
      expect(Object.keys(given.get(id) as object)).toEqual([
        'enqueued',
        'pickedUp',
        'engineCalled',
        'engineReturned',
        'endSent',
      ]);
    expect(await redis.hget(keys.run('stamps-on'), 'timings')).toMatch(/^\d+,/);
    expect(given.get('stamps-off')).toBeUndefined();
    expect(await redis.hget(keys.run('stamps-off'), 'timings')).toBeNull();
  });
});
