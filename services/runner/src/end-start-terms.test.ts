/**
 * A run's end fused with its job's completion (end-complete-store.ts) carries the next job's start
 * terms only when the completion may bring a job: a worker registered idle (direct hand-off, its
 * pop under way) has every submit handed to its pop, so its completion's fetch-next finds none and
 * the end goes as `END_AND_COMPLETE` without the 24 start arguments. A worker holding every slot
 * (a backlog) still starts its next job in the completion. Real redis-server, BullMQ, fair share,
 * run store; calls read from MONITOR.
 */
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunnerUnderTest, runnerHarness, until, untilIdle } from '../test/runner-harness.ts';
import { END_AND_COMPLETE_SHA, END_COMPLETE_START_SHA } from './end-complete-store.ts';

let redis: Redis;
const h = runnerHarness('end-start-terms-test');
const { monitor, newRun, setUp, warmUp } = h;

beforeAll(async () => {
  ({ redis } = await h.start());
});
afterAll(() => h.close());

/** The fused end calls a client sent for `runId` (the run's record among its keys), by script. */
function fusedEnds(sent: string[][], runId: string): { sha: string | undefined; argc: number }[] {
  return sent
    .filter(
      (c) =>
        c[0] === 'evalsha' &&
        (c[1] === END_AND_COMPLETE_SHA || c[1] === END_COMPLETE_START_SHA) &&
        c.includes(keys.run(runId)),
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
        expect(ends.map((e) => e.sha)).toEqual([END_AND_COMPLETE_SHA]);
        withTerms.push(...ends.filter((e) => e.sha === END_COMPLETE_START_SHA).map((e) => e.argc));
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
});
