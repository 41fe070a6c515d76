/**
 * BullMQ's own work on a run's path, done once a worker where its input is the same every run: the
 * job's options' text decoded once (run-job-build.ts), the completion's fixed keys and packed
 * options made once (completion-args.ts). Runs submitted as the gateway submits them (its add
 * leaves the job's id out of the options' text), handed to an idle runner, run to completion, each
 * once. Real redis-server, BullMQ, fair share, run store, direct hand-off.
 */
import { keys } from '@islet/core';
import { createRunStore } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRunQueueStore } from '../../gateway/src/run-queue-store.ts';
import { mode, onRunnerHarness, until, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
const h = onRunnerHarness('bull-path-test', (up) => {
  ({ redis } = up);
});
const { setUp, warmUp, sealer } = h;

/** The gateway's submit (runs-service.ts): admission, record, queued count and the add in one call. */
function submit(queues: ReturnType<typeof createRunQueueStore>, id: string) {
  const run = runFixture(id, { tenant: 'acme', mode, session: 's', principal: 'p' });
  return createRunStore(redis, sealer).create(
    run,
    { maxInFlight: 100, sessionTtlSeconds: 6400, countQueued: true, carriesAdd: true },
    (_counted, ride) => queues.enqueueRun({ runId: run.id, tenant: 'acme', mode, attempts: 1 }, ride),
  );
}

describe("BullMQ's work on a run's path", () => {
  it("decodes the jobs' options once and makes the completion's fixed parts once; every run completes once", async () => {
    const t = await setUp('bull-path', true, undefined, { handOff: true, noteEnds: true });
    const queues = createRunQueueStore(redis, () => undefined, true);
    try {
      await warmUp(t, 'bw');
      const worker = t.worker();
      const builder = worker.jobBuilder;
      const writer = () =>
        (
          worker as unknown as {
            scripts: { completionArgs?: { writes: number; builds: number; preparedUses: number } };
          }
        ).scripts.completionArgs;
      const ids = ['b1', 'b2', 'b3', 'b4'];
      const builds = builder.builds;
      const preparedUses = writer()?.preparedUses ?? 0;
      const decodes = builder.decodes;
      for (const id of ids) {
        await untilIdle(redis, t);
        const outcomes = t.outcomes.length;
        expect(await submit(queues, id)).toBe('created');
        // The executor's notes: `completed 1` once `finish` returned, `ended true` once the end's answer came.
        await until(`${id} to complete`, async () => t.outcomes.slice(outcomes).includes('ended true'));
        expect(t.outcomes.slice(outcomes).sort()).toEqual(['completed 1', 'ended true']);
        await until(`${id} completed`, async () => (await t.queue.getJob(id))?.finishedOn !== undefined);
      }
      expect(worker.handOffs).toBeGreaterThanOrEqual(ids.length);
      // Four jobs built here, their one options' text decoded once (eb0b0c0: `Job.fromJSON`'s
      // `optsFromJSON`, once a job).
      expect(builder.builds - builds).toBe(ids.length);
      expect(builder.decodes - decodes).toBe(1);
      // The completion's fixed parts made once for all (the warm-up's run made them).
      expect(writer()?.builds).toBe(1);
      // Each handed job's packed options made at its registration, off the run's end; but the
      // first's: its token was registered while the warm-up's run went on, before any completion
      // had made the fixed parts.
      expect((writer()?.preparedUses ?? 0) - preparedUses).toBeGreaterThanOrEqual(ids.length - 1);
      for (const id of ids) {
        expect(await redis.hmget(keys.run(id), 'status', 'attempts')).toEqual(['Completed', '1']);
        const job = await t.queue.getJob(id);
        expect(await job?.getState()).toBe('completed');
        expect(job?.attemptsMade).toBe(1);
      }
    } finally {
      await Promise.all(Object.values(queues.queues).map((q) => q.close()));
      await t.close();
    }
  });
});
