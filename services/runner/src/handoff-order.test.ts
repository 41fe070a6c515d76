/**
 * The order of the submit script's two wake-ups (round 47 `handoff-order`): an idle worker blocks on
 * its own hand-off key and the queue's marker in one pop, and Redis serves a client blocked on
 * several keys from the key a script signalled ready first. A submit that hands the worker a job
 * while leaving another one behind writes both: the answer must come first, or the worker is woken
 * by the marker and gets its job only through its TAKE_BACK round trip. Real redis-server, real
 * BullMQ, the gateway's add and the runner's own worker; the path is read from the worker's counters.
 */
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { runJobOptions } from '@islet/runs';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { handingAdds } from '../../gateway/src/handoff-add-store.ts';
import { mode, onRunnerHarness, until, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-order-test', (up) => {
  ({ redis } = up);
});
const { newRun, setUp, warmUp } = h;
const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;

describe("the submit's hand-off with a job left behind it", () => {
  it('the idle worker takes its answer by its pop, not by a take-back after the marker woke it', async () => {
    const t = await setUp('order', true, undefined, { handOff: true });
    const q = new Queue(runQueueName(mode), { connection: redis.duplicate(), prefix: QUEUE_PREFIX });
    handingAdds(q, mode, {});
    try {
      await warmUp(t, 'ow');
      // What each of the worker's pops answered from here: the key it was served from.
      const served: string[] = [];
      const bclient = await (t.worker() as unknown as { blockingConnection: { client: Promise<Redis> } })
        .blockingConnection.client;
      const pop = bclient.bzpopminBuffer.bind(bclient) as (...a: unknown[]) => Promise<Buffer[] | null>;
      (bclient as unknown as { bzpopminBuffer: unknown }).bzpopminBuffer = (...a: unknown[]) =>
        pop(...a).then((reply) => {
          served.push(reply ? String(reply[0]) : 'timeout');
          return reply;
        });
      // A job delayed an hour: the delayed set stands, so the hand-off's look behind its job finds
      // the queue not drained and sets the marker in the same script (answer element 6 = 0).
      const woken = t.worker().idleTakeBacks;
      await newRun('later');
      await q.add(
        'run',
        { runId: 'later', tenant: 'acme', enqueuedAtMs: Date.now() },
        {
          ...runJobOptions('later', 1),
          delay: 3_600_000,
        },
      );
      // The delay's marker woke the worker (its take-back removes the registration, nothing
      // handed), and it registers again, its pop sent with the registration: counted from the
      // take-back on (counted as it is sent, before the registration it removes is gone).
      await until('the delay marker taken', async () => t.worker().idleTakeBacks > woken);
      const registrations = t.worker().idleRegistrations;
      await until('registered again', async () => t.worker().idleRegistrations > registrations);
      expect(await redis.exists(`${prefix}marker`)).toBe(0);
      await untilIdle(redis, t);
      // The pop in flight now was sent after the wrap (after the take-back): the next reply is its.
      const from = served.length;
      const before = { handOffs: t.worker().handOffs, takeBacks: t.worker().idleTakeBacks };
      const done = t.outcomes.length;

      await newRun('now');
      await q.add('run', { runId: 'now', tenant: 'acme', enqueuedAtMs: Date.now() }, runJobOptions('now', 1));
      await until('now to complete', async () => t.outcomes.length === done + 1);

      // Handed (no fetch of its own), and its pop was served from its own key: the answer, not the
      // marker (6b60376a and 7bdcf3eb: the marker, then the job by the take-back that follows it).
      expect(t.worker().handOffs).toBe(before.handOffs + 1);
      expect(served[from]).toBe(`${prefix}handoff:${t.worker().id}`);
      // The marker set for the job behind it is left for the next pop, which then takes it back
      // (nothing handed): at most that one take-back.
      expect(t.worker().idleTakeBacks).toBeLessThanOrEqual(before.takeBacks + 1);
      // The job behind it waits as before, and the marker the script set for it stands.
      expect(await q.getJobState('later')).toBe('delayed');
      expect(await q.getJobState('now')).toBe('completed');
    } finally {
      await q.close();
      await t.close();
    }
  });
});
