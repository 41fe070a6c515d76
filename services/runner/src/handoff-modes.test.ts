/**
 * Every sandbox mode's registration at the runner's defaults is the compact form (`@islet/runs`
 * handoff-terms.ts), and the gateway's add of that mode's queue (run-queue-store.ts, its mode's
 * names in its script) reads it: the job is handed (the fetch's answer pushed to the worker's
 * hand-off key, the job locked with the registration's token and lock), not left to a fetch. The
 * registration is what a runner of the mode writes (`IdleTermsWriter` given `handOffFixedTerms` of
 * its queue's keys, as mode-worker.ts does, and the real lifecycle's start arguments), stored under
 * a worker id no one pops, so the script's reading is all that is tested. Real redis-server,
 * BullMQ, run store.
 */
import { keys, loadConfig } from '@islet/core';
import { QUEUE_PREFIX, runQueueName, SANDBOX_MODES } from '@islet/protocol';
import {
  createRunStore,
  HAND_OFF_FETCH_KEYS,
  handOffFixedTerms,
  handOffKeys,
  runJobOptions,
  startArgsList,
} from '@islet/runs';
import { runFixture } from '@islet/testkit';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRunQueueStore } from '../../gateway/src/run-queue-store.ts';
import { onRunnerHarness } from '../test/runner-harness.ts';
import { IdleTermsWriter } from './handoff-store.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-modes-test', (up) => {
  ({ redis } = up);
});

describe("every mode's registration at the runner's defaults", () => {
  it('is compact and the gateway’s add of its queue hands it the job', async () => {
    expect(loadConfig({ ISLET_REDIS_URL: 'redis://x', ...h.base }).ISLET_HANDOFF_COMPACT_TERMS).toBe('on');
    const store = createRunQueueStore(redis, () => undefined, true);
    const life = h.lifecycle();
    try {
      for (const mode of SANDBOX_MODES) {
        // The runner's side: its worker's queue keys (a Queue's are a Worker's: BullMQ's QueueBase).
        const own = new Queue(runQueueName(mode), { connection: redis.duplicate(), prefix: QUEUE_PREFIX });
        const prefix = own.keys[''] ?? '';
        const workerId = `ghost-${mode}`;
        const k = handOffKeys(prefix, workerId);
        const writer = new IdleTermsWriter(handOffFixedTerms(own.keys, mode));
        const token = `${workerId}:h:0`;
        const stored = writer.write({
          keys: HAND_OFF_FETCH_KEYS.map((name) => own.keys[name] ?? ''),
          prefix,
          token,
          lockDuration: 25_000,
          name: 'vm',
          startArgs: startArgsList(life.fetchedStart({ mode, share: 0.5, cap: 0, leaseMs: 30_000 })),
          handOff: k.handOff,
        });
        await own.close();
        expect(writer.compactWrites, mode).toBe(1);
        expect(stored.startsWith('['), mode).toBe(true);
        const now = Number((await redis.time())[0]) * 1000;
        await redis.zadd(k.idle, now + 60_000, workerId);
        await redis.hset(k.idleArgs, workerId, stored);
        const id = `m-${mode}`;
        await createRunStore(redis, h.sealer).create(runFixture(id, { tenant: 'acme', mode }));
        await store.queues[mode].add(
          'run',
          { tenant: 'acme', enqueuedAtMs: Date.now() },
          runJobOptions(id, 1),
        );
        // Handed: the answer on the worker's key, the registration taken, the job active under its lock.
        expect(await redis.zcard(k.handOff), mode).toBe(1);
        expect(await redis.hget(k.idleArgs, workerId), mode).toBeNull();
        expect(await redis.get(`${prefix}${id}:lock`), mode).toBe(token);
        expect(await redis.pttl(`${prefix}${id}:lock`), mode).toBeGreaterThan(20_000);
        expect(await redis.lrange(`${prefix}active`, 0, -1), mode).toEqual([id]);
        expect(await redis.hget(keys.run(id), 'status'), mode).toBe('Running');
      }
    } finally {
      for (const q of Object.values(store.queues)) await q.close();
    }
  });
});
