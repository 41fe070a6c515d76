/**
 * A run executor (run-executor.ts) under test with the real run store and journal on a test Redis
 * and fakes around them: an engine that answers a run Completed (calling its binding once when
 * asked), a gateway that journals a call as the gateway's claim does, and the ends the executor
 * hands the store read back; a run's limits and a signal never aborted. Shared by
 * run-executor-order.test.ts, end-no-decisions.test.ts and (limits, signal) fetched-attempt.test.ts.
 */
import { createLogger, createMetrics, generateSealKey, sealerFromConfig } from '@islet/core';
import type { Engine, RunOutcome } from '@islet/engine';
import { createCallJournal, createRunStore } from '@islet/runs';
import type { Redis } from 'ioredis';
import type { GatewayClient } from '../src/gateway-client.ts';
import { createRunExecutor } from '../src/run-executor.ts';

export type ExecutorStores = ReturnType<typeof stores>;

/** A run's limits as these tests store them. */
export const limits = { timeoutMs: 5000, memoryMb: 64, outputBytes: 65_536, outputCap: 'shared' as const };

/** A cancel / hand-back signal never aborted. */
export const signal = new AbortController().signal;

/** A run's outcome as a fake engine answers it: completed with 1, nothing printed, `extra` over it. */
export const completed = (extra: Record<string, unknown> = {}): RunOutcome =>
  ({
    status: 'completed',
    valueJson: '1',
    logs: [],
    outputTruncated: false,
    calls: [],
    durationMs: 1,
    ...extra,
  }) as RunOutcome;

/** An engine whose program calls its binding once when its code is `'call'` (else no call). */
export function callOnceEngine(): Engine {
  return {
    execute: async (code: string, opts: Parameters<Engine['execute']>[1]) => {
      const calls = [];
      if (code === 'call') {
        const call = { index: 0, binding: 'notes.read', argsJson: '{}' };
        await opts?.onCall?.(call, undefined as never);
        calls.push(call);
      }
      return completed({ calls });
    },
  } as unknown as Engine;
}

/** The real run store and journal on `redis` under a fresh seal key. */
export function stores(redis: Redis) {
  const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
  return { runs: createRunStore(redis, sealer), journal: createCallJournal({ redis, sealer }) };
}

/** A gateway whose every call is claimed in `journal` (as the gateway's claim journals it) and answered 1. */
export function journalingGateway({ journal }: ExecutorStores): GatewayClient {
  return {
    call: async (
      runId: string,
      attempt: number,
      call: { index: number; binding: string; argsJson: string },
    ) => {
      await journal.claim(runId, attempt, call);
      return { outcome: { type: 'result', valueJson: '1' } };
    },
  } as unknown as GatewayClient;
}

/** What the executor told the store's `finish` of each run's end (`pick` of it), by run id. */
export function endsTold<T>(
  { runs }: ExecutorStores,
  pick: (end: Parameters<ExecutorStores['runs']['finish']>[1]) => T,
): Map<string, T> {
  const told = new Map<string, T>();
  const finish = runs.finish.bind(runs);
  runs.finish = (run, end) => {
    told.set(run.id, pick(end));
    return finish(run, end);
  };
  return told;
}

/** An executor over `engine` and the stores; `name` names its metrics' component and its logger. */
export function executorOf(
  name: string,
  engine: Engine,
  { runs, journal }: ExecutorStores,
  extra: Partial<Parameters<typeof createRunExecutor>[0]> = {},
) {
  return createRunExecutor({
    runs,
    settings: { get: async () => ({}) } as never,
    journal,
    engineFor: () => engine,
    gateway: {} as GatewayClient,
    metrics: createMetrics({ component: name, defaults: false }),
    logger: createLogger({ name: `${name}-test`, level: 'silent' }),
    ...extra,
  });
}

/**
 * The stores on `redis` and an executor over them with the call-once engine and the journaling
 * gateway (`name` as in `executorOf`).
 */
export function journalingExecutor(name: string, redis: Redis) {
  const store = stores(redis);
  const executor = executorOf(name, callOnceEngine(), store, { gateway: journalingGateway(store) });
  return { store, executor };
}
