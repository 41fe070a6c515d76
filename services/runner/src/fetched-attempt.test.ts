/**
 * A run whose worker's fetch began its attempt (its lease's `begun`: the hand-off's, or a fetch with
 * the run's start) reaches its engine in the executor's own call: the fetch's answer is read in the
 * turn (`RunLifecycle.fetchedAttempt`), not through `beginAttempt`'s promises (round 42
 * `pickup-floor`). The answer is read once and is what `beginAttempt` makes of it; a lease without
 * one still goes through the attempt's script. Real run store and journal on a real redis-server,
 * a fake engine that records its call (never answering: only the call's moment is read).
 */
import { createLogger, createMetrics, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import type { Engine } from '@islet/engine';
import { createCallJournal, createRunLifecycle, createRunStore, type RunLease } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { onRedisServer } from '../../runs/test/test-redis.ts';
import { limits, signal } from '../test/executor-fakes.ts';
import type { GatewayClient } from './gateway-client.ts';
import { createRunExecutor } from './run-executor.ts';

let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/** Stores run `id` and answers the fetch's start for it as `fetch-lease-begin-11` does (granted, attempt 1). */
async function fetchedStart(id: string): Promise<unknown> {
  const runs = createRunStore(redis, sealer);
  await runs.create(runFixture(id, { request: { connections: [], bindings: [], limits } }));
  await redis.hset(keys.run(id), 'status', 'Running', 'attempts', '1');
  const flat = Object.entries(await redis.hgetall(keys.run(id))).flat();
  return [flat, 1, ['#attempt', '1'], [1, 4]];
}

/** A lease carrying `begun` (the terms a run's end would use are not read before the engine). */
function leaseWith(begun: unknown, acquired: unknown[]): RunLease {
  return {
    begun,
    acquired: (answer: unknown) => acquired.push(answer),
    held: () => true,
    released: () => undefined,
  } as unknown as RunLease;
}

describe("a fetched attempt's way to the engine", () => {
  it('the engine is called inside the executor call, the lease granted from the fetch answer, read once', async () => {
    const called: string[] = [];
    const engine = {
      execute: (code: string) => {
        called.push(code);
        return new Promise(() => undefined);
      },
    } as unknown as Engine;
    const executor = createRunExecutor({
      runs: createRunStore(redis, sealer),
      settings: { get: async () => ({}) } as never,
      journal: createCallJournal({ redis, sealer }),
      engineFor: () => engine,
      gateway: {} as GatewayClient,
      metrics: createMetrics({ component: 'fetched-attempt', defaults: false }),
      logger: createLogger({ name: 'fetched-attempt-test', level: 'silent' }),
    });
    const acquired: unknown[] = [];
    const lease = leaseWith(await fetchedStart('fa-1'), acquired);
    const job = {
      runId: 'fa-1',
      mode: 'read-only' as const,
      enqueuedAtMs: Date.now(),
      cancel: signal,
      handBack: signal,
      lease,
    };
    void executor.execute(job);
    // Synchronously: the executor's call has returned its promise, nothing after it has run.
    expect(called).toEqual(['return 1']);
    expect(acquired).toEqual([{ ok: true, limit: 4 }]);
    expect(lease.begun).toBeUndefined();
  });

  it("the lifecycle's answer is beginAttempt's for the same fetch answer; a lease without one gets none", async () => {
    const journal = createCallJournal({ redis, sealer });
    const life = createRunLifecycle({ runs: createRunStore(redis, sealer), journal });
    const begun = await fetchedStart('fa-2');
    const a: unknown[] = [];
    const b: unknown[] = [];
    const now = life.fetchedAttempt(leaseWith(begun, a));
    const later = await life.beginAttempt('fa-2', leaseWith(begun, b));
    expect(now).toBeDefined();
    expect(now?.attempt).toBe(1);
    expect(now?.run?.id).toBe('fa-2');
    expect(now?.run?.status).toBe('Running');
    expect(JSON.stringify(now)).toBe(JSON.stringify(later));
    expect(a).toEqual(b);
    expect(life.fetchedAttempt(leaseWith(undefined, []))).toBeUndefined();
    expect(life.fetchedAttempt(undefined)).toBeUndefined();
    const once = leaseWith(begun, []);
    expect(life.fetchedAttempt(once)).toBeDefined();
    expect(life.fetchedAttempt(once)).toBeUndefined();
  });
});
