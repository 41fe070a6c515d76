/**
 * An idle worker's run end (registered idle: its completion fetches nothing, its next job comes by
 * hand-off into a slot reserved already) settles the fused call's answer after a timer, not in the
 * turn that read it (end-complete-store.ts `settledLater`): that turn, which Redis's write of the
 * answer wakes right before it writes the waiter's push, then gives the CPU back at once instead of
 * running the runner's bookkeeping first. Where a slot is not spare beside the ended run's, the
 * answer settles in its turn as before. Real redis-server, BullMQ, fair share, run store, direct
 * hand-off (a sequential client); the order read from a log of the calls' answers and the ends'
 * notes, never from time.
 */
import { keys } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runnerHarness, until, untilIdle } from '../test/runner-harness.ts';
import { END_AND_COMPLETE_SHA } from './end-complete-store.ts';

let redis: Redis;
const h = runnerHarness('end-settled-later-test');
const { newRun, setUp, warmUp } = h;

beforeAll(async () => {
  ({ redis } = await h.start());
});
afterAll(() => h.close());

/**
 * Three sequential runs through an idle worker of `slots` slots; for each, the log from the fused
 * call's answer on: `answered` as it resolves, `next turn` from a `setImmediate` queued there (it runs
 * before the loop sleeps again), `ended true` as the run's end is told its answer.
 */
async function threeEnds(slots: number) {
  const t = await setUp(`settled-${slots}`, true, undefined, { handOff: true, noteEnds: true, slots });
  const original = LuaScript.prototype.run;
  const run = vi.spyOn(LuaScript.prototype, 'run');
  const logs: string[][] = [];
  try {
    await warmUp(t, `w${slots}`);
    const log = t.outcomes;
    run.mockImplementation(function (this: LuaScript, ...a) {
      const answer = original.apply(this, a);
      if (this.sha === END_AND_COMPLETE_SHA)
        // Attached before the fused call's own caller awaits it: its reaction runs first.
        void answer.then(() => {
          log.push('answered');
          setImmediate(() => log.push('next turn'));
        });
      return answer;
    });
    const before = t.worker().endsSettledLater;
    for (const id of ['a', 'b', 'c'].map((x) => `${x}${slots}`)) {
      await untilIdle(redis, t);
      await newRun(id);
      log.length = 0;
      await t.add(id);
      await until(`${id} to end`, async () => log.includes('ended true') && log.includes('next turn'));
      await until(`${id} completed`, async () => (await t.queue.getJob(id))?.finishedOn !== undefined);
      logs.push(log.filter((e) => e === 'answered' || e === 'next turn' || e === 'ended true'));
      expect(await redis.hmget(keys.run(id), 'status', 'attempts')).toEqual(['Completed', '1']);
      const events = await redis.xrange(keys.runEvents(id), '-', '+');
      expect(events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end')).toHaveLength(1);
      expect(await (await t.queue.getJob(id))?.getState()).toBe('completed');
    }
    return { logs, settledLater: t.worker().endsSettledLater - before };
  } finally {
    run.mockRestore();
    await t.close();
  }
}

describe("an idle worker's run end: the fused call's answer settled after a timer", () => {
  it('with a slot spare beside the ended run (4 slots: one busy, one reserved for the hand-off), the end is told its answer only after the turn that read it', async () => {
    const { logs, settledLater } = await threeEnds(4);
    // d92635a: ['answered', 'ended true', 'next turn'] each (the answer's work in its own turn).
    for (const log of logs) expect(log).toEqual(['answered', 'next turn', 'ended true']);
    expect(settledLater).toBe(3);
  });

  it('with no slot spare (2 slots: one busy, one reserved for the hand-off), the answer settles in its turn', async () => {
    const { logs, settledLater } = await threeEnds(2);
    for (const log of logs) expect(log).toEqual(['answered', 'ended true', 'next turn']);
    expect(settledLater).toBe(0);
  });
});
