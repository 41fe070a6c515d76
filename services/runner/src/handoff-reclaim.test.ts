/**
 * A job handed to a worker that never takes it (killed while registered idle) is taken back by the
 * gateway's watch on its hand-offs (gateway handoff-reclaim-store.ts, `@islet/runs`
 * reclaimHandedScript), not left to BullMQ's stalled check. Who removes the answer from the worker's
 * hand-off key owns the job: the watch, the worker's pop, its take-back. Real redis-server, BullMQ,
 * fair share, run store; the watch's look is called with a time past its delay (its timer's own
 * delay is set far off), so nothing here reads a clock.
 */
import { keys } from '@islet/core';
import { TAKE_BACK } from '@islet/runs';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { addOn, prefix, registerDead, watchedQueue } from '../test/handing-queue.ts';
import { onRunnerHarness, type RunnerUnderTest, until, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-reclaim-test', (up) => {
  ({ redis } = up);
});
const { newRun, setUp, warmUp } = h;
/** The watch's own delay: never reached while a test runs; `look` is called with a later time. */
const FAR = 3_600_000;
const later = () => Date.now() + 2 * FAR;

/** A registration as a worker killed while idle leaves it (`registerDead`): nothing pops it. */
const deadRegistration = (runner: RunnerUnderTest, tag: string, id: string) =>
  registerDead(h, redis, runner, tag, id);

/** The job's events (BullMQ's stream) as `event` or `event<-prev`. */
async function events(jobId: string): Promise<string[]> {
  const rows = await redis.xrange(`${prefix}events`, '-', '+');
  const out: string[] = [];
  for (const [, flat] of rows) {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i] as string] = flat[i + 1] as string;
    if (f.jobId === jobId) out.push(f.prev ? `${f.event}<-${f.prev}` : String(f.event));
  }
  return out;
}

describe("the gateway's watch on its hand-offs", () => {
  it('a job handed to a killed worker goes back to the wait list (not stalled) and a live worker runs it once', async () => {
    const first = await setUp('rk', true, undefined, { handOff: true });
    const { q, watch } = watchedQueue(redis, { reclaimMs: FAR });
    let live: RunnerUnderTest | undefined;
    try {
      const dead = await deadRegistration(first, 'rkw', 'rk-dead');
      await newRun('rk1');
      await addOn(q, 'rk1', 2);
      // Handed: active under the dead worker's token, its attempt begun, the answer on its key.
      expect(await q.getJobState('rk1')).toBe('active');
      expect(await redis.get(`${prefix}rk1:lock`)).toBe('rk-dead:h:0');
      expect(await redis.zcard(dead.handOff)).toBe(1);
      expect(await redis.hget(keys.run('rk1'), 'attempts')).toBe('1');
      expect(watch.size).toBe(1);
      const taken = await watch.look(later());
      expect(taken).toEqual([{ handOff: dead.handOff, token: 'rk-dead:h:0', jobId: 'rk1', moved: 0 }]);
      expect(watch.reclaimed).toBe(1);
      // Back at the wait list's head with no lock, the answer gone from the key: BullMQ's
      // move from active to wait (its `waiting` event), not its stalled check's.
      expect(await q.getJobState('rk1')).toBe('waiting');
      expect(await redis.exists(`${prefix}rk1:lock`, dead.handOff)).toBe(0);
      expect(await events('rk1')).toContain('waiting<-active');
      // A second look finds nothing (the entry went with the first).
      expect(await watch.look(later())).toEqual([]);
      live = await setUp('rk2', true, undefined, { handOff: true });
      await until('rk1 to complete', async () => (await q.getJobState('rk1')) === 'completed');
      // Run once, as the second attempt (the handed one was begun, never executed); never stalled.
      expect(live.outcomes).toEqual(['completed 2']);
      expect(await redis.hget(keys.run('rk1'), 'status')).toBe('Completed');
      expect(await redis.hget(`${prefix}rk1`, 'stc')).toBeNull();
      expect(await redis.hget(`${prefix}rk1`, 'ats')).toBe('2');
      expect(await events('rk1')).not.toContain('stalled');
    } finally {
      await q.close();
      await live?.close();
      await first.close();
    }
  });

  it('a hand-off its live worker popped is not touched: the look finds nothing, the run ends once', async () => {
    const t = await setUp('rl', true, undefined, { handOff: true });
    const { q, watch } = watchedQueue(redis, { reclaimMs: FAR });
    try {
      await warmUp(t, 'rlw');
      await untilIdle(redis, t);
      await newRun('rl1');
      await addOn(q, 'rl1', 2);
      await until('rl1 to complete', async () => (await q.getJobState('rl1')) === 'completed');
      // Handed (the add reported it: the watch's entry), popped by the live worker, started once.
      expect(watch.size).toBe(1);
      expect(await redis.hget(`${prefix}rl1`, 'ats')).toBe('1');
      expect(await watch.look(later())).toEqual([]);
      expect(watch.reclaimed).toBe(0);
      expect(t.outcomes.filter((o) => o.startsWith('completed'))).toEqual(['completed 1', 'completed 1']);
      expect(await events('rl1')).not.toContain('waiting<-active');
    } finally {
      await q.close();
      await t.close();
    }
  });

  it('the take-back of a worker between its pop and its fetch and the look: exactly one gets the job', async () => {
    for (const first of ['take-back', 'look'] as const) {
      const r = await setUp(`rt-${first}`, true, undefined, { handOff: true });
      const { q, watch } = watchedQueue(redis, { reclaimMs: FAR });
      const id = `rt-${first}-dead`;
      const run = `rt-${first}-1`;
      try {
        const dead = await deadRegistration(r, `rtw-${first}`, id);
        await newRun(run);
        await addOn(q, run, 2);
        const takeBack = () =>
          TAKE_BACK.run(redis, [dead.idle, dead.idleArgs, dead.handOff], [id]) as Promise<unknown>;
        if (first === 'take-back') {
          // The worker's take-back came first: it owns the job (still active under its token).
          expect(await takeBack()).not.toBeNull();
          expect(await watch.look(later())).toEqual([]);
          expect(await q.getJobState(run)).toBe('active');
          expect(await redis.get(`${prefix}${run}:lock`)).toBe(`${id}:h:0`);
        } else {
          expect((await watch.look(later())).map((x) => x.jobId)).toEqual([run]);
          expect(await takeBack()).toBeNull();
          expect(await q.getJobState(run)).toBe('waiting');
        }
      } finally {
        await q.close();
        await r.close();
        // The job left for the next case's workers would be theirs: removed with its lock.
        await redis.del(`${prefix}${run}:lock`);
        await redis.lrem(`${prefix}active`, 0, run);
        await redis.lrem(`${prefix}wait`, 0, run);
      }
    }
  });

  it("an answer of another hand-off (another gateway's, under another token) is not this watch's", async () => {
    const r = await setUp('ro', true, undefined, { handOff: true });
    const { q, watch } = watchedQueue(redis, { reclaimMs: FAR });
    try {
      const dead = await deadRegistration(r, 'row', 'ro-dead');
      await newRun('ro1');
      await addOn(q, 'ro1', 2);
      // As if another gateway handed the worker a later job: its token, not the noted one.
      const [member] = await redis.zrangeBuffer(dead.handOff, 0, 0);
      watch.note(dead.handOff, 'ro-dead:h:other');
      expect(await watch.look(later())).toEqual([]);
      expect(await redis.zrangeBuffer(dead.handOff, 0, 0)).toEqual([member]);
      expect(await q.getJobState('ro1')).toBe('active');
      await redis.del(dead.handOff, `${prefix}ro1:lock`);
      await redis.lrem(`${prefix}active`, 0, 'ro1');
    } finally {
      await q.close();
      await r.close();
    }
  });
});
