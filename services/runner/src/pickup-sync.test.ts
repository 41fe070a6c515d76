/**
 * A job whose fetch reserved its slot and began its attempt (the hand-off's, or BullMQ's fetch with
 * the run's start) reaches its executor in the processor's own call: the slot taken from its
 * reservation and the lease made from the fetch's answer in that turn (slot-gate.ts
 * `takeReserved`, fair-share.ts `fetchedLease`), not a microtask or more later through their
 * promises (round 42 `pickup-floor`). The lease is the same (the fetch's answer rides on it), the
 * run ends once, and the slot and lease go back. Real redis-server, BullMQ, fair share, run store.
 */
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RunJobData, runJobOptions } from '@islet/runs';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { mode, onRunnerHarness, until, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('pickup-sync-test', (up) => {
  ({ redis } = up);
});
const { newRun, setUp, warmUp } = h;

/** What the test reads of the worker: BullMQ's processor call, the hand-offs, its slot gate. */
interface Inside {
  processFn: (...args: unknown[]) => unknown;
  handOffs: number;
  redisFetches: number;
}

/** Each execute's entry: its run, whether it came inside the processor's call, its lease's fetch answer. */
interface Entry {
  id: string;
  inProcessor: boolean;
  begun: boolean;
}

async function watchedRunner(tag: string) {
  const entries: Entry[] = [];
  let inProcessor = false;
  const t = await setUp(tag, true, undefined, {
    handOff: true,
    onExecute: (id, job) => {
      entries.push({ id, inProcessor, begun: job.lease?.begun !== undefined });
    },
  });
  const w = t.worker() as unknown as Inside;
  const processFn = w.processFn;
  // BullMQ calls its processor through this property (callProcessJob): the flag is up for exactly
  // the synchronous part of that call.
  w.processFn = function (this: unknown, ...args: unknown[]) {
    inProcessor = true;
    try {
      return processFn.apply(this, args);
    } finally {
      inProcessor = false;
    }
  };
  await warmUp(t, `${tag}-w`);
  await untilIdle(redis, t);
  entries.length = 0;
  return { t, w, entries };
}

describe("a fetched job's way to its executor", () => {
  it('a handed job: the executor entered in the processor call, its lease the fetch answer; one end', async () => {
    const { t, w, entries } = await watchedRunner('ps-handed');
    try {
      const handOffs = w.handOffs;
      const done = t.outcomes.length;
      await newRun('handed-1');
      await t.add('handed-1');
      await until(
        'the handed run completed',
        async () => (await t.queue.getJobState('handed-1')) === 'completed',
      );
      expect(w.handOffs - handOffs).toBe(1);
      expect(entries).toEqual([{ id: 'handed-1', inProcessor: true, begun: true }]);
      expect(t.outcomes.slice(done)).toEqual(['completed 1']);
      // The slot went back: the worker registers idle again and takes the next hand-off.
      await untilIdle(redis, t);
      await newRun('handed-2');
      await t.add('handed-2');
      await until(
        'the next handed run completed',
        async () => (await t.queue.getJobState('handed-2')) === 'completed',
      );
      expect(entries.map((e) => [e.id, e.inProcessor, e.begun])).toEqual([
        ['handed-1', true, true],
        ['handed-2', true, true],
      ]);
      expect(w.handOffs - handOffs).toBe(2);
    } finally {
      await t.close();
    }
  });

  it("a job BullMQ's own fetch brought with its run's start: the same", async () => {
    const { t, w, entries } = await watchedRunner('ps-fetched');
    const plain = new Queue<RunJobData>(runQueueName(mode), {
      connection: redis.duplicate(),
      prefix: QUEUE_PREFIX,
    });
    try {
      const fetches = w.redisFetches;
      await newRun('fetched-1');
      // BullMQ's own add (no hand-off): the marker wakes the worker's fetch, which begins the run.
      await plain.add(
        'run',
        { runId: 'fetched-1', tenant: 'acme', enqueuedAtMs: Date.now() },
        runJobOptions('fetched-1', 1),
      );
      await until(
        'the fetched run completed',
        async () => (await t.queue.getJobState('fetched-1')) === 'completed',
      );
      expect(w.redisFetches - fetches).toBe(1);
      expect(entries).toEqual([{ id: 'fetched-1', inProcessor: true, begun: true }]);
    } finally {
      await plain.close();
      await t.close();
    }
  });
});
