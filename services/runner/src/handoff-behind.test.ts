/**
 * A run that ends while its worker is registered idle, after a submit's hand-off took that
 * registration and another submit queued behind it, the pop's answer still on its way to the
 * worker (16 clients at an idle runner; the bench's stall of round 32, test/bench/README.md
 * `stall-hunt`). Its completion must not fetch the job queued behind: fetched there, the job came
 * without its run's start and without a slot kept for it, and waited in the slot gate while the
 * other slots passed from run to run by their completions, until the queue drained. The worker's
 * own loop, which the queue's marker wakes, fetches it with a slot and its run's start.
 */
import { keys } from '@islet/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { mode, onRunnerHarness, until, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-behind-test', (up) => {
  ({ redis } = up);
});
const { newRun, setUp, warmUp } = h;

describe('a run ending while its worker is registered idle', () => {
  it('its completion leaves the job queued behind a hand-off to the worker loop, which fetches it with its slot and start', async () => {
    let hold: Promise<void> | undefined;
    let release: () => void = () => undefined;
    const at: string[] = [];
    const t = await setUp('behind', true, undefined, {
      slots: 2,
      handOff: true,
      // A run's end then goes with its job's completion, as the real executor's.
      noteEnds: true,
      // Read at each run's work: only the run `a` is held.
      get hold() {
        return hold;
      },
      onWork: (runId) => at.push(runId),
    });
    try {
      // The worker's pops answer only when the test lets them: a runner reading its blocking
      // connection late (a loaded machine), the hand-off done in Redis meanwhile.
      const bclient = await (t.worker() as unknown as { blockingConnection: { client: Promise<Redis> } })
        .blockingConnection.client;
      let late: Promise<void> | undefined;
      let answer: () => void = () => undefined;
      const pop = bclient.bzpopminBuffer.bind(bclient) as (...a: unknown[]) => Promise<unknown>;
      (bclient as unknown as { bzpopminBuffer: unknown }).bzpopminBuffer = (...a: unknown[]) =>
        pop(...a).then(async (reply) => {
          await late;
          return reply;
        });

      await warmUp(t, 'bw');
      await untilIdle(redis, t);
      hold = new Promise<void>((r) => {
        release = r;
      });
      await newRun('a');
      await t.add('a');
      // `a` holds one slot; the worker registers idle again with the other.
      await until('a at work', async () => at.includes('a'));
      await untilIdle(redis, t);
      hold = undefined;
      late = new Promise<void>((r) => {
        answer = r;
      });
      await newRun('b');
      await newRun('c');
      // `b` is handed to the registration (its answer held on its way); `c` queues behind it.
      await t.add('b');
      await t.add('c');
      expect(await t.queue.getJobState('b')).toBe('active');
      expect(await t.queue.getJobState('c')).toBe('waiting');
      const fetches = t.worker().redisFetches;

      release();
      await until('a to complete', async () => (await t.queue.getJobState('a')) === 'completed');
      // The completion fetched nothing: `c` waits for the worker's loop (the base fetched it here,
      // its run not started and no slot kept for it).
      expect(await t.queue.getJobState('c')).toBe('waiting');
      expect(await redis.hget(keys.run('c'), 'attempts')).toBe('0');

      answer();
      await until('b and c to complete', async () => (await t.queue.getCompletedCount()) === 4);
      // `c` came by a fetch of the worker's own (its slot reserved, its run started in it).
      expect(t.worker().redisFetches).toBeGreaterThan(fetches);
      for (const id of ['a', 'b', 'c']) {
        expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
        expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
      }
      expect(t.outcomes.filter((o) => o === 'completed 1')).toHaveLength(4);
      expect(t.outcomes.filter((o) => o.startsWith('ended'))).toEqual([
        'ended true',
        'ended true',
        'ended true',
        'ended true',
      ]);
      await until('no lease left', async () => (await redis.zcard(keys.poolBusy(mode))) === 0);
    } finally {
      await t.close();
    }
  });
});
