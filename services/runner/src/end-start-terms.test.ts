/**
 * A run's end fused with its job's completion (end-complete-store.ts) carries the next job's start
 * terms only when the completion may bring a job: a worker registered idle (direct hand-off, its
 * pop under way) has every submit handed to its pop or waking it, so its completion fetches no next
 * job and the end goes as `END_AND_COMPLETE` without the 24 start arguments. A worker holding every slot
 * (a backlog) still starts its next job in the completion. Real redis-server, BullMQ, fair share,
 * run store; calls read from MONITOR.
 */
import { keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RunJobData, runJobOptions } from '@islet/runs';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { gate } from '../test/run-backlog.ts';
import { mode, onRunnerHarness, type RunnerUnderTest, until, untilIdle } from '../test/runner-harness.ts';
import { isEndAndCompleteSha, isEndCompleteStartSha } from './end-complete-store.ts';
import { isFetchStartSha } from './fetch-start-store.ts';

let redis: Redis;
const h = onRunnerHarness('end-start-terms-test', (up) => {
  ({ redis } = up);
});
const { monitor, newRun, setUp, warmUp } = h;

/** The fused end calls a client sent for `runId` (its id among the arguments), by script. */
function fusedEnds(sent: string[][], runId: string): { sha: string | undefined; argc: number }[] {
  return sent
    .filter(
      (c) =>
        c[0] === 'evalsha' &&
        (isEndAndCompleteSha(c[1]) || isEndCompleteStartSha(c[1])) &&
        // The run's id as an argument: a baked end makes its run's keys in its text (round 47 `end-keys`).
        c.includes(runId),
    )
    .map((c) => ({ sha: c[1], argc: c.length - 3 - Number(c[2]) }));
}

/** Runs `ids` one after another, each added once the worker registered idle (a sequential client). */
async function sequential(t: RunnerUnderTest, ids: string[]): Promise<string[][]> {
  const m = await monitor();
  try {
    for (const id of ids) {
      await untilIdle(redis, t);
      await newRun(id);
      const ended = t.outcomes.filter((o) => o === 'ended true').length;
      await t.add(id);
      // `ended true`: the end, handed to the completion (`noteEnds`), known written.
      await until(
        `${id} to end`,
        async () => t.outcomes.filter((o) => o === 'ended true').length === ended + 1,
      );
    }
  } finally {
    await m.stop();
  }
  return m.sent;
}

describe("a run's end and its job's completion, one call", () => {
  it('carries no start terms from a worker registered idle; every run still handed, started and ended once', async () => {
    const t = await setUp('idle-end', true, undefined, { handOff: true, noteEnds: true });
    try {
      await warmUp(t, 'iw');
      const ids = ['i1', 'i2', 'i3'];
      const sent = await sequential(t, ids);
      const withTerms: number[] = [];
      for (const id of ids) {
        const ends = fusedEnds(sent, id);
        // 1564b97: END_COMPLETE_START_SHA, its 24 start arguments and the deferral's after the end's.
        expect(ends.map((e) => isEndAndCompleteSha(e.sha))).toEqual([true]);
        withTerms.push(...ends.filter((e) => isEndCompleteStartSha(e.sha)).map((e) => e.argc));
        expect(await redis.hmget(keys.run(id), 'status', 'attempts')).toEqual(['Completed', '1']);
        const events = await redis.xrange(keys.runEvents(id), '-', '+');
        expect(events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end')).toHaveLength(1);
      }
      expect(withTerms).toEqual([]);
      expect(t.outcomes.filter((o) => o.startsWith('completed')).slice(-3)).toEqual([
        'completed 1',
        'completed 1',
        'completed 1',
      ]);
      // Each was handed to the registered worker (no fetch of its own took it).
      expect(t.worker().handOffs).toBeGreaterThanOrEqual(3);
    } finally {
      await t.close();
    }
  });

  it("a job left waiting with no marker is not its completion's (the worker registered): the worker's own fetch takes it, its run started there, once", async () => {
    const g = gate();
    const t = await setUp('idle-late', true, undefined, { handOff: true, noteEnds: true, hold: g.held });
    // An older gateway's add: BullMQ's own, no hand-off.
    const stock = new Queue<RunJobData>(runQueueName(mode), {
      connection: redis.duplicate(),
      prefix: QUEUE_PREFIX,
    });
    const meta = `${QUEUE_PREFIX}:${runQueueName(mode)}:meta`;
    try {
      await warmUp(t, 'lw');
      g.close();
      await untilIdle(redis, t);
      await newRun('k1');
      await t.add('k1');
      await until('k1 to be held', async () => (await redis.hget(keys.run('k1'), 'status')) === 'Running');
      await untilIdle(redis, t);
      // The add finds the queue at its concurrency: the job waits and sets no marker, so the
      // registered pop stays asleep (as in the instant before a pop takes a marker).
      await redis.hset(meta, 'concurrency', 1);
      await newRun('k2');
      await stock.add(
        'run',
        { runId: 'k2', tenant: 'acme', enqueuedAtMs: Date.now() },
        runJobOptions('k2', 1),
      );
      await redis.hdel(meta, 'concurrency');
      expect(await redis.lrange(`${QUEUE_PREFIX}:${runQueueName(mode)}:wait`, 0, -1)).toEqual(['k2']);
      const m = await monitor();
      try {
        g.open();
        await until('k1 and k2 to end', async () => t.outcomes.filter((o) => o === 'ended true').length >= 3);
      } finally {
        await m.stop();
      }
      // k1's end went without start terms and its completion fetched nothing (parking-worker-end.ts:
      // a job it brought had no start and no slot kept, round 32 `stall-hunt`). k2 waited for the
      // registered pop's end (its timeout: no marker woke it), then the worker's fused fetch took it.
      expect(fusedEnds(m.sent, 'k1').map((e) => isEndAndCompleteSha(e.sha))).toEqual([true]);
      // No lease and attempt start of its own (lease-and-begin-9: 9 keys, the pool's slots first).
      const apart = m.sent.filter((c) => c[0] === 'evalsha' && c[2] === '9' && c[3] === keys.poolSlots(mode));
      expect(apart).toEqual([]);
      expect(m.sent.filter((c) => isFetchStartSha(c[1])).length).toBeGreaterThanOrEqual(1);
      for (const id of ['k1', 'k2']) {
        expect(await redis.hmget(keys.run(id), 'status', 'attempts')).toEqual(['Completed', '1']);
        const events = await redis.xrange(keys.runEvents(id), '-', '+');
        expect(events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end')).toHaveLength(1);
      }
      expect(await t.queue.getCompletedCount()).toBe(3);
    } finally {
      g.open();
      await redis.hdel(meta, 'concurrency');
      await stock.close();
      await t.close();
    }
  });
});
