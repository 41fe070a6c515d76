/**
 * A handed job's processor started from the pop's answer (parking-worker.ts `startHanded`), not
 * after BullMQ's chain (its wait's race, fetch, `nextJobFromJobData`, main loop queue): the job
 * must be to BullMQ what its loop makes of it — its lock under the registration's token and
 * renewed, active, stalled-checked, retried, cancelled and closed over as any other — and each run
 * ends once. Every case runs on both paths (the worker's `directStart` on and off), so a guarantee
 * the direct path dropped fails beside the path that keeps it. Real redis-server, BullMQ, fair
 * share, run store; the adds are the gateway's hand-off adds, or BullMQ's own for a fetched job.
 */
import { channels, keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { type RunJobData, runJobOptions } from '@islet/runs';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { mode, onRunnerHarness, type RunnerSetUpOptions, until, untilIdle } from '../test/runner-harness.ts';
import type { ExecuteJob } from './run-executor-types.ts';

let redis: Redis;
const h = onRunnerHarness('direct-start-test', (up) => {
  ({ redis } = up);
});
const { newRun, setUp, warmUp } = h;
const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;

/** What the tests read of the worker's privates and BullMQ's. */
interface Inside {
  id: string;
  directStart: boolean;
  handOffs: number;
  redisFetches: number;
  jobsGivenBackClosing: number;
  handOffWait: { directStarts: number };
  lockManager: { trackedJobs: Map<string, { token: string }> };
  nextJobFromJobData: (data: unknown, id: string | undefined, token: string) => Promise<unknown>;
  on(event: 'stalled', f: (id: string) => void): void;
}

/**
 * A runner on one path whose runs are held at their work until `release` (armed again by `arm`;
 * released at first, for the warm-up): the runs it works (with their jobs), the jobs BullMQ's chain
 * built (`nextJobFromJobData`), its `stalled` events.
 */
async function heldRunner(tag: string, direct: boolean, opts: RunnerSetUpOptions = {}) {
  let release: () => void = () => undefined;
  let hold: Promise<void> = Promise.resolve();
  const work: { id: string; job: ExecuteJob; directStarts: number; chained: boolean }[] = [];
  const chain: string[] = [];
  const stalled: string[] = [];
  let inside: Inside | undefined;
  /** Direct starts before the test's runs (the warm-up's). */
  let mark = 0;
  const t = await setUp(tag, true, undefined, {
    handOff: true,
    noteEnds: true,
    ...opts,
    get hold() {
      return hold;
    },
    onWork: (id, job) => {
      work.push({
        id,
        job,
        directStarts: (inside?.handOffWait.directStarts ?? -1) - mark,
        chained: chain.includes(id),
      });
      opts.onWork?.(id, job);
    },
  });
  inside = t.worker() as unknown as Inside;
  inside.directStart = direct;
  const built = inside.nextJobFromJobData;
  inside.nextJobFromJobData = function (this: unknown, data, id, token) {
    if (data && id !== undefined) chain.push(id);
    return built.call(this, data, id, token);
  };
  inside.on('stalled', (id) => stalled.push(id));
  await warmUp(t, `${tag}-w`);
  await untilIdle(redis, t);
  work.length = 0;
  mark = inside.handOffWait.directStarts;
  const directs = () => (inside?.handOffWait.directStarts ?? 0) - mark;
  const arm = () => {
    hold = new Promise<void>((resolve) => {
      release = resolve;
    });
  };
  arm();
  return { t, w: inside, work, chain, stalled, arm, directs, release: () => release() };
}

/** The run's end events written (one a run, whatever path and however many attempts). */
async function ends(id: string): Promise<number> {
  const events = await redis.xrange(keys.runEvents(id), '-', '+');
  return events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end').length;
}

describe.each([
  ['direct', true],
  ['chain', false],
])("a handed job's start (%s path)", (path, direct) => {
  it('is an active job under the registration token, its lock tracked for renewal, the processor first where direct; a fetched job beside it as before', async () => {
    const { t, w, work, chain, release } = await heldRunner(`ds-${path}`, direct);
    const plain = new Queue<RunJobData>(runQueueName(mode), {
      connection: redis.duplicate(),
      prefix: QUEUE_PREFIX,
    });
    const [a, b] = [`a-${path}`, `b-${path}`];
    try {
      const handOffs = w.handOffs;
      const fetches = w.redisFetches;
      await newRun(a);
      await t.add(a);
      await until('the handed run at work', async () => work.length === 1);
      // The processor ran before BullMQ's chain built the job (direct), or after it (chain).
      expect(work[0]).toMatchObject({ id: a, directStarts: direct ? 1 : 0, chained: !direct });
      // A job fetched by BullMQ's own loop beside it (BullMQ's add: the marker wakes the fetch).
      await untilIdle(redis, t);
      await newRun(b);
      await plain.add('run', { runId: b, tenant: 'acme', enqueuedAtMs: Date.now() }, runJobOptions(b, 1));
      await until('both runs at work', async () => work.length === 2);
      expect(work[1]).toMatchObject({ id: b, directStarts: direct ? 1 : 0, chained: true });
      expect(w.handOffs - handOffs).toBe(1);
      expect(w.redisFetches - fetches).toBe(1);
      expect((await t.queue.getActive()).map((j) => j.id).sort()).toEqual([a, b]);
      // Each job's lock is its token, tracked for renewal by BullMQ's lock manager.
      const tokenA = await redis.get(`${prefix}${a}:lock`);
      const tokenB = await redis.get(`${prefix}${b}:lock`);
      expect(tokenA).toMatch(new RegExp(`^${w.id}:h:\\d+$`));
      expect(tokenB).toMatch(new RegExp(`^${w.id}:\\d+$`));
      expect(w.lockManager.trackedJobs.get(a)?.token).toBe(tokenA);
      expect(w.lockManager.trackedJobs.get(b)?.token).toBe(tokenB);
      release();
      for (const id of [a, b])
        await until(`${id} completed`, async () => (await t.queue.getJobState(id)) === 'completed');
      expect(t.outcomes.filter((o) => o.startsWith('completed'))).toEqual([
        'completed 1',
        'completed 1',
        'completed 1',
      ]);
      for (const id of [a, b]) {
        expect(await ends(id)).toBe(1);
        expect(w.lockManager.trackedJobs.has(id)).toBe(false);
      }
      // The direct job reached BullMQ's loop all the same: the worker registers idle again.
      await untilIdle(redis, t);
      expect(chain.includes(a)).toBe(!direct);
    } finally {
      release();
      await plain.close();
      await t.close();
    }
  });

  it('held past its lock duration keeps its lock: never stalled, run once', async () => {
    const env = { ISLET_RUNNER_LOCK_DURATION_MS: '1000', ISLET_RUNNER_STALLED_INTERVAL_MS: '500' };
    const { t, work, stalled, release, directs } = await heldRunner(`dl-${path}`, direct, { env });
    const id = `l-${path}`;
    try {
      await newRun(id);
      await t.add(id, 'acme', 2);
      await until('the run at work', async () => work.length === 1);
      expect(directs()).toBe(direct ? 1 : 0);
      // Three lock durations: the lock lapses unless renewed; the stalled check runs ~6 times.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(await redis.pttl(`${prefix}${id}:lock`)).toBeGreaterThan(0);
      expect(stalled).toEqual([]);
      release();
      await until(`${id} completed`, async () => (await t.queue.getJobState(id)) === 'completed');
      expect(work.map((x) => x.id)).toEqual([id]);
      expect(await ends(id)).toBe(1);
      expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
    } finally {
      release();
      await t.close();
    }
  }, 20_000);

  it('its lock lost: stalled, taken back and run again once; the run ends once', async () => {
    const env = { ISLET_RUNNER_LOCK_DURATION_MS: '1000', ISLET_RUNNER_STALLED_INTERVAL_MS: '500' };
    const { t, work, stalled, release, directs } = await heldRunner(`dk-${path}`, direct, { env });
    const id = `k-${path}`;
    try {
      await newRun(id);
      await t.add(id, 'acme', 2);
      await until('the run at work', async () => work.length === 1);
      expect(directs()).toBe(direct ? 1 : 0);
      // The lock lost (as to a Redis that dropped it): BullMQ's renewal cannot take it back, its
      // stalled check moves the job back to wait and a fetch runs it again (attempt 2).
      await redis.del(`${prefix}${id}:lock`);
      await until('the run at work again', async () => work.length === 2);
      expect(stalled).toEqual([id]);
      expect(work.map((x) => x.id)).toEqual([id, id]);
      release();
      await until(`${id} completed`, async () => (await t.queue.getJobState(id)) === 'completed');
      await until(`${id} ended`, async () => (await redis.hget(keys.run(id), 'status')) === 'Completed');
      // The run ended once, by its second attempt.
      expect(await ends(id)).toBe(1);
      expect(await redis.hget(keys.run(id), 'attempts')).toBe('2');
      expect(t.outcomes.filter((o) => o === 'completed 2')).toHaveLength(1);
    } finally {
      release();
      await t.close();
    }
  }, 20_000);

  it('cancelled mid-run: its cancel signal aborts, its run ends once', async () => {
    const { t, work, release, directs } = await heldRunner(`dc-${path}`, direct);
    const id = `c-${path}`;
    try {
      await newRun(id);
      await t.add(id);
      await until('the run at work', async () => work.length === 1);
      expect(directs()).toBe(direct ? 1 : 0);
      await redis.publish(channels.cancel, id);
      await until('its cancel', async () => work[0]?.job.cancel.aborted === true);
      release();
      await until(`${id} done`, async () => (await t.queue.getJobState(id)) === 'completed');
      expect(await ends(id)).toBe(1);
      expect(work.map((x) => x.id)).toEqual([id]);
    } finally {
      release();
      await t.close();
    }
  });

  it("the runner's close in the run's own turn (SIGTERM): the close waits for it, it completes once, nothing given back", async () => {
    const id = `s-${path}`;
    let stopping: Promise<void> | undefined;
    let stop: () => Promise<void> = async () => undefined;
    const { t, w, work, release, directs } = await heldRunner(`dt-${path}`, direct, {
      // In the processor's own turn: before BullMQ's loop reached a job started directly.
      onWork: (runId) => {
        if (runId === id) stopping = stop();
      },
    });
    stop = () => t.stop();
    try {
      await newRun(id);
      await t.add(id);
      await until('the run at work', async () => work.length === 1);
      expect(directs()).toBe(direct ? 1 : 0);
      let closed = false;
      void stopping?.then(() => {
        closed = true;
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(closed).toBe(false);
      release();
      await stopping;
      expect(await t.queue.getJobState(id)).toBe('completed');
      expect(t.outcomes.filter((o) => o.startsWith('completed'))).toEqual(['completed 1', 'completed 1']);
      expect(w.jobsGivenBackClosing).toBe(0);
      expect(await ends(id)).toBe(1);
    } finally {
      release();
      await t.close();
    }
  });
});
