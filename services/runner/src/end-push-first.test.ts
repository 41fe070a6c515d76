/**
 * A run's end pushed to its waiter reaches the waiter before the runner hears the end's answer:
 * the fused end call goes behind a PING in one socket write (end-complete-store.ts `pushFirst`), so
 * after the end's fsync Redis writes the subscriber's pending push before this client's answers
 * (it writes its clients' pending output newest first). An end nobody waits on goes alone. Real
 * redis-server, BullMQ, fair share, run store; calls read from MONITOR; the order in which this
 * process hears the push and the end's answer (each on its own socket, read in the order they
 * became readable).
 */
import { channels, keys } from '@islet/core';
import { createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mode, runnerHarness, until, untilIdle } from '../test/runner-harness.ts';
import { END_AND_COMPLETE_SHA } from './end-complete-store.ts';

let redis: Redis;
const h = runnerHarness('end-push-first-test');
const { monitor, setUp, warmUp, sealer } = h;

beforeAll(async () => {
  ({ redis } = await h.start());
});
afterAll(() => h.close());

describe("a pushed end's answer order", () => {
  it("writes the pushed end to the waiter's connection before the end's answer to the runner", async () => {
    const t = await setUp('push-first', true, undefined, { handOff: true, noteEnds: true });
    const sub = redis.duplicate();
    try {
      await warmUp(t, 'pw');
      // The ends known written (`ended true`) when each run's push was heard.
      const atPush = new Map<string, number>();
      sub.on('message', (_c: string, m: string) => {
        const [id, tag] = m.split(' ');
        if (tag === 'end' && id) atPush.set(id, t.outcomes.filter((o) => o === 'ended true').length);
      });
      await sub.subscribe(channels.runEvents);
      const m = await monitor();
      const ids = ['p1', 'p2', 'p3', 'q1'];
      const endedBefore = new Map<string, number>();
      try {
        for (const id of ids) {
          await untilIdle(redis, t);
          // p…: waited (`pushEnd`, as a `Prefer: wait` submit stores it); q1: nobody waits.
          await createRunStore(redis, sealer).create(
            runFixture(id, { tenant: 'acme', mode, ...(id.startsWith('p') ? { pushEnd: true } : {}) }),
          );
          endedBefore.set(id, t.outcomes.filter((o) => o === 'ended true').length);
          await t.add(id);
          await until(
            `${id} to end`,
            async () => t.outcomes.filter((o) => o === 'ended true').length > endedBefore.get(id)!,
          );
          if (id.startsWith('p')) await until(`${id}'s push`, async () => atPush.has(id));
        }
      } finally {
        await m.stop();
      }
      // Heard before the runner heard its end written (base: after, `ended true` already counted),
      // in all but at most one end: this process reads its sockets in the order they became
      // readable, but one already on the poll's ready list (level-triggered) can be read first.
      const first = ['p1', 'p2', 'p3'].filter((id) => atPush.get(id) === endedBefore.get(id));
      expect(first.length).toBeGreaterThanOrEqual(2);
      for (const id of ['p1', 'p2', 'p3']) {
        // The end's call right behind a PING from the same client.
        const at = m.seen.findIndex(
          (c) => c[0] === 'evalsha' && c[1] === END_AND_COMPLETE_SHA && c.includes(keys.run(id)),
        );
        expect(at).toBeGreaterThan(0);
        expect(m.seen[at - 1]?.[0]).toBe('ping');
        expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
        const events = await redis.xrange(keys.runEvents(id), '-', '+');
        expect(events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end')).toHaveLength(1);
      }
      // Nobody waits on q1: its end goes alone, and nothing is pushed.
      const q = m.seen.findIndex(
        (c) => c[0] === 'evalsha' && c[1] === END_AND_COMPLETE_SHA && c.includes(keys.run('q1')),
      );
      expect(q).toBeGreaterThan(0);
      expect(m.seen[q - 1]?.[0]).not.toBe('ping');
      expect(atPush.has('q1')).toBe(false);
      expect(m.seen.filter((c) => c[0] === 'ping')).toHaveLength(3);
    } finally {
      sub.disconnect();
      await t.close();
    }
  });
});
