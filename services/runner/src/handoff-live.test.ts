/**
 * A hand-off registration's liveness (@islet/runs handoff-live.ts, round 46 `takeback`): a
 * runner's idle worker holds the live channel named as its hand-off key on the runner's subscriber
 * connection, and a gateway's add with the check (ISLET_HANDOFF_LIVE_CHECK) hands a job only to a
 * registration whose channel is held. A runner killed while registered (its connections closed)
 * then takes no job: its registration is dropped by the add and the job waits for a live worker's
 * fetch, where before it was handed and taken back by the gateway's watch 1 s later
 * (handoff-reclaim.test.ts). Real redis-server, BullMQ, fair share, run store, runners made by
 * `createRunner`; the watch's own delay is set far off, so nothing here reads a clock. Fails on
 * 9f886855: no runner holds a channel (NUMSUB 0), and an add hands the dead registration its job.
 */
import { keys } from '@islet/core';
import { handOffKeys, liveChannelOf } from '@islet/runs';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { addOn, prefix, registerDead, watchedQueue } from '../test/handing-queue.ts';
import { handOff, onRunnerHarness, type RunnerUnderTest, until, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-live-test', (up) => {
  ({ redis } = up);
});
const { newRun, setUp, warmUp } = h;
const FAR = 3_600_000;

/** Subscribers to the live channel of the worker whose hand-off key is `handOffKey`. */
async function holders(handOffKey: string): Promise<number> {
  const [, n] = (await redis.pubsub('NUMSUB', liveChannelOf(handOffKey))) as [string, number];
  return Number(n);
}

/** A registration as a runner killed while idle leaves it (`registerDead`): no one holds its live channel. */
const deadRegistration = (runner: RunnerUnderTest, tag: string, id: string, ttlMs?: number) =>
  registerDead(h, redis, runner, tag, id, { ttlMs });

describe("a hand-off registration's liveness", () => {
  it("an idle worker's runner holds its live channel while it lives and lets it go with its close", async () => {
    const t = await setUp('lh', true, undefined, { handOff: true });
    await warmUp(t, 'lhw');
    await untilIdle(redis, t);
    const own = handOffKeys(prefix, t.worker().id).handOff;
    expect(await holders(own)).toBe(1);
    await t.close();
    await until('the channel let go', async () => (await holders(own)) === 0);
  });

  it('with the check, a registration whose runner is gone takes no job: dropped, the job left for a live fetch, run once', async () => {
    const first = await setUp('ld', true, undefined, { handOff: true });
    const { q, watch } = watchedQueue(redis, { reclaimMs: FAR, liveCheck: true });
    let live: RunnerUnderTest | undefined;
    try {
      const dead = await deadRegistration(first, 'ldw', 'ld-dead');
      expect(await holders(dead.handOff)).toBe(0);
      await newRun('ld1');
      await addOn(q, 'ld1', 2);
      // Not handed: waiting, no lock, nothing on the dead key, no attempt begun, nothing to take back.
      expect(await q.getJobState('ld1')).toBe('waiting');
      expect(await redis.exists(`${prefix}ld1:lock`, dead.handOff)).toBe(0);
      expect(await redis.hget(keys.run('ld1'), 'attempts')).toBe('0');
      expect(watch.size).toBe(0);
      // The dead registration went with the add (its member and terms).
      expect(await redis.zscore(handOff.idle, 'ld-dead')).toBeNull();
      expect(await redis.hget(handOff.idleArgs, 'ld-dead')).toBeNull();
      live = await setUp('ld2', true, undefined, { handOff: true });
      await until('ld1 to complete', async () => (await q.getJobState('ld1')) === 'completed');
      // Run once, its first attempt.
      expect(await redis.hget(`${prefix}ld1`, 'ats')).toBe('1');
      expect(live.outcomes).toContain('completed 1');
    } finally {
      await q.close();
      await live?.close();
      await first.close();
    }
  });

  it('with the check, a dead registration above a live one: the add drops it and hands the live one the job', async () => {
    const first = await setUp('lb', true, undefined, { handOff: true });
    const { q, watch } = watchedQueue(redis, { reclaimMs: FAR, liveCheck: true });
    let live: RunnerUnderTest | undefined;
    try {
      live = await setUp('lb2', true, undefined, { handOff: true });
      await warmUp(live, 'lbw2');
      // The dead one expires last, so the add's ZPOPMAX chooses it first.
      await deadRegistration(first, 'lbw', 'lb-dead', FAR);
      await untilIdle(redis, live);
      await newRun('lb1');
      await addOn(q, 'lb1', 2);
      await until('lb1 to complete', async () => (await q.getJobState('lb1')) === 'completed');
      // Handed to the live worker (the watch noted its key), the dead registration dropped.
      expect(watch.size).toBe(1);
      expect(await redis.zscore(handOff.idle, 'lb-dead')).toBeNull();
      expect(await redis.hget(`${prefix}lb1`, 'ats')).toBe('1');
      expect(await watch.look(Date.now() + 2 * FAR)).toEqual([]);
      // Never on the dead key (the live worker's pop took it in the add's turn).
      expect(await redis.exists(handOffKeys(prefix, 'lb-dead').handOff)).toBe(0);
    } finally {
      await q.close();
      await live?.close();
      await first.close();
    }
  });

  it('with the check, a registration whose channel is still held but whose pop is gone (a runner lost without its connections closing, or its blocking one alone) is handed, and the watch takes it back: what the take-back stays for', async () => {
    const first = await setUp('lk', true, undefined, { handOff: true });
    const { q, watch } = watchedQueue(redis, { reclaimMs: FAR, liveCheck: true });
    const holder = redis.duplicate();
    let live: RunnerUnderTest | undefined;
    try {
      const dead = await deadRegistration(first, 'lkw', 'lk-held');
      // Redis still counts its subscriber (no EOF read: a lost node, or the runner's subscriber alive).
      await holder.subscribe(liveChannelOf(dead.handOff));
      expect(await holders(dead.handOff)).toBe(1);
      await newRun('lk1');
      await addOn(q, 'lk1', 2);
      // The check passes: handed, its answer left on the key nobody pops, the watch noting it.
      expect(await q.getJobState('lk1')).toBe('active');
      expect(await redis.get(`${prefix}lk1:lock`)).toBe('lk-held:h:0');
      expect(await redis.exists(dead.handOff)).toBe(1);
      expect(watch.size).toBe(1);
      // The look (its delay passed, read off no clock): back to the wait list, the key emptied.
      expect((await watch.look(Date.now() + 2 * FAR)).map((r) => r.jobId)).toEqual(['lk1']);
      expect(await redis.exists(dead.handOff)).toBe(0);
      expect(await q.getJobState('lk1')).toBe('waiting');
      live = await setUp('lk2', true, undefined, { handOff: true });
      await until('lk1 to complete', async () => (await q.getJobState('lk1')) === 'completed');
      // The handed start and the live worker's: two attempts begun, one run (its second attempt's).
      expect(await redis.hget(`${prefix}lk1`, 'ats')).toBe('2');
      expect(live.outcomes).toEqual(['completed 2']);
    } finally {
      holder.disconnect();
      await q.close();
      await live?.close();
      await first.close();
    }
  });

  it('without the check (ISLET_HANDOFF_LIVE_CHECK=off), the same dead registration is handed the job (taken back by the watch)', async () => {
    const first = await setUp('ln', true, undefined, { handOff: true });
    const { q, watch } = watchedQueue(redis, { reclaimMs: FAR, liveCheck: false });
    try {
      const dead = await deadRegistration(first, 'lnw', 'ln-dead');
      await newRun('ln1');
      await addOn(q, 'ln1', 2);
      expect(await q.getJobState('ln1')).toBe('active');
      expect(await redis.get(`${prefix}ln1:lock`)).toBe('ln-dead:h:0');
      expect((await watch.look(Date.now() + 2 * FAR)).map((r) => r.jobId)).toEqual(['ln1']);
      expect(await redis.exists(dead.handOff)).toBe(0);
    } finally {
      await q.close();
      await first.close();
      await redis.del(`${prefix}ln1:lock`);
      await redis.lrem(`${prefix}wait`, 0, 'ln1');
      await redis.lrem(`${prefix}active`, 0, 'ln1');
    }
  });
});
