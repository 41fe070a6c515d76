/**
 * A run's job written by format 2 (`ISLET_WRITE_FORMAT=2`, gateway run-queue-store.ts) carries no
 * `runId` in its data: its job id is the run's (`runJobOptions`), and every reader takes it from
 * there (@islet/runs `jobRunId`; test/bench/README.md, round 40 `format-two`). Real redis-server,
 * BullMQ and fair share: such a job's run is started and ended on each pick-up path — the fetch
 * that starts its run (fetch-lease-begin-11.lua), the gateway's hand-off add running that fetch,
 * and a start of its own (the runner's TypeScript) — as one written by format 1 is; the failed-jobs
 * feed names its run.
 */
import { keys } from '@islet/core';
import { failedJobsFeed, jobRunId } from '@islet/runs';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { handOffAddShaOf } from '../../gateway/src/handoff-add-store.ts';
import { onRunnerHarness, scriptsBeforeWork, until, untilIdle } from '../test/runner-harness.ts';
import { isFetchStartSha } from './fetch-start-store.ts';

let redis: Redis;
const h = onRunnerHarness('job-run-id-test', (up) => {
  ({ redis } = up);
});
const { newRun, monitor, setUp, warmUp } = h;

async function ranAndEnded(id: string) {
  expect(await redis.hget(keys.run(id), 'attempts')).toBe('1');
  expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
}

describe('a run job without runId in its data (format 2)', () => {
  it('the fetch that starts its run takes the run id from the job id', async () => {
    const t = await setUp('lean-fused', true);
    try {
      await warmUp(t, 'lw1');
      await newRun('lf1');
      const m = await monitor();
      try {
        await t.addLean('lf1');
        await until('lf1 to complete', async () => t.outcomes.length === 2);
      } finally {
        await m.stop();
      }
      expect(isFetchStartSha(scriptsBeforeWork(m.seen, 'lf1')[1])).toBe(true);
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
      await ranAndEnded('lf1');
      expect(await redis.zcard(keys.poolTenantLeases('read-only', 'acme'))).toBe(0);
    } finally {
      await t.close();
    }
  });

  it("the gateway's hand-off add starts it for the idle worker", async () => {
    const t = await setUp('lean-handed', true, undefined, { handOff: true });
    try {
      await warmUp(t, 'lw2');
      await untilIdle(redis, t);
      await newRun('lh1');
      const m = await monitor();
      try {
        await t.addLean('lh1');
        await until('lh1 to complete', async () => t.outcomes.length === 2);
      } finally {
        await m.stop();
      }
      expect(scriptsBeforeWork(m.sent, 'lh1')).toEqual([handOffAddShaOf('read-only', t.queue.keys)]);
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
      await ranAndEnded('lh1');
    } finally {
      await t.close();
    }
  });

  it('a runner whose fetches start nothing starts it itself', async () => {
    const t = await setUp('lean-plain', false);
    try {
      await warmUp(t, 'lw3');
      await newRun('lp1');
      await t.addLean('lp1');
      await until('lp1 to complete', async () => t.outcomes.length === 2);
      expect(t.outcomes).toEqual(['completed 1', 'completed 1']);
      await ranAndEnded('lp1');
    } finally {
      await t.close();
    }
  });

  it('the failed-jobs feed and jobRunId name the run by its job id, and by its data where it has one', async () => {
    const feed = failedJobsFeed(() => [
      [
        'read-only',
        {
          getFailed: async () => [
            { id: 'lean-1', failedReason: 'boom', data: {} },
            { id: 'decision-r1', failedReason: 'boom', data: { runId: 'old-1' } },
          ],
        },
      ],
    ]);
    const due = [];
    for await (const item of feed.due(Date.now())) due.push(item.runId);
    expect(due).toEqual(['lean-1', 'old-1']);
    expect(jobRunId({ id: 'j', data: { runId: 'r' } })).toBe('r');
    expect(jobRunId({ id: 'j', data: {} })).toBe('j');
  });
});
