/**
 * BullMQ's part of a run's fused scripts (the gateway's add with its hand-off, the runner's fetch,
 * the end with its completion), through `@islet/runs`' bull-quiet.ts: counted command by command
 * (`INFO commandstats`; MONITOR where the runner's own background would blur the totals), and
 * held to what BullMQ's own scripts leave in Redis. Mixed releases: a job added by the fused add
 * is run by a stock BullMQ worker (an older runner), and a job added by BullMQ's own add (an
 * older gateway) is run by the fused fetch and completion. Real redis-server, real BullMQ.
 */
import { createRedis, keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { runJobOptions } from '@islet/runs';
import type { RedisServer } from '@islet/testkit';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { handingAdds } from '../../gateway/src/handoff-add-store.ts';
import { commandStats } from '../test/run-backlog.ts';
import { mode, onRunnerHarness, until } from '../test/runner-harness.ts';
import { isEndAndCompleteSha, isEndCompleteStartSha } from './end-complete-store.ts';

let server: RedisServer;
let redis: Redis;
const h = onRunnerHarness('queue-commands-test', (up) => {
  ({ server, redis } = up);
});
const { newRun, setUp, warmUp } = h;

const queueKey = (name: string, q = runQueueName(mode)) => `${QUEUE_PREFIX}:${q}:${name}`;

/** The commands `fn` made Redis run, by name. */
async function counted(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await commandStats(redis);
  await fn();
  const after = await commandStats(redis);
  const by: Record<string, number> = {};
  for (const [name, calls] of after) {
    const n = calls - (before.get(name) ?? 0);
    if (n > 0 && name !== 'info') by[name] = n;
  }
  return by;
}

/** Each script call MONITOR saw, with the commands it ran inside (name, first key). */
async function scriptCalls(server: RedisServer, fn: () => Promise<unknown>) {
  const mon = await createRedis(server.url).monitor();
  const calls: { args: string[]; inner: [string, string][] }[] = [];
  mon.on('monitor', (_t: string, args: string[], source: string) => {
    if (source === 'lua') calls.at(-1)?.inner.push([String(args[0]).toLowerCase(), String(args[1])]);
    else calls.push({ args: args.map(String), inner: [] });
  });
  let stopped = false;
  mon.on('error', (err: Error) => {
    if (!stopped) throw err;
  });
  try {
    await fn();
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    stopped = true;
    mon.disconnect();
  }
  return calls;
}

describe("BullMQ's part of a run's scripts, counted", () => {
  it("the add of a run's job runs 6 commands of BullMQ's, not 10: no events stream, no job counter", async () => {
    const q = new Queue('qc-add', {
      connection: { host: '127.0.0.1', port: server.port },
      prefix: QUEUE_PREFIX,
    });
    handingAdds(q);
    try {
      await q.add('run', { runId: 'warm', tenant: 'acme', enqueuedAtMs: 1 }, runJobOptions('warm', 1));
      const by = await counted(() =>
        q.add('run', { runId: 'a1', tenant: 'acme', enqueuedAtMs: 1 }, runJobOptions('a1', 1)),
      );
      // The call, the job's EXISTS (which also asks whether any worker is idle) and HMSET, meta's
      // HMGET, the LPUSH, the marker's ZADD; no idle worker, so no hand-off pop (round 23's
      // cmd-submit). BullMQ's own add also sends INCR, HGET of opts.maxLenEvents and two XADDs.
      expect(by).toEqual({ evalsha: 1, exists: 1, hmset: 1, hmget: 1, lpush: 1, zadd: 1 });
      expect(await redis.xlen(queueKey('events', 'qc-add'))).toBe(0);
      // The job as BullMQ's own add stores it.
      const stock = new Queue('qc-add', {
        connection: { host: '127.0.0.1', port: server.port },
        prefix: QUEUE_PREFIX,
      });
      await stock.add('run', { runId: 'a2', tenant: 'acme', enqueuedAtMs: 1 }, runJobOptions('a2', 1));
      await stock.close();
      const ours = await redis.hgetall(queueKey('a1', 'qc-add'));
      const theirs = await redis.hgetall(queueKey('a2', 'qc-add'));
      expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort());
      expect(ours.opts).toBe(theirs.opts?.replaceAll('a2', 'a1'));
      expect(await redis.lrange(queueKey('wait', 'qc-add'), 0, -1)).toEqual(['a2', 'a1', 'warm']);
    } finally {
      await q.obliterate({ force: true });
      await q.close();
    }
  });

  it("a run's end with its job's completion: BullMQ's part is 5 commands (6 with the next fetch, finding none) and an EXISTS shared with the release, none of them the events stream's", async () => {
    // An end whose caller learns its answer later (`onEnded`) is the one handed to the completion.
    const t = await setUp('qc-end', true, undefined, { noteEnds: true });
    try {
      await warmUp(t, 'cw');
      await newRun('c1');
      const eventsBefore = await redis.xlen(queueKey('events'));
      const calls = await scriptCalls(server, async () => {
        await t.add('c1');
        await until('c1 to complete', async () => (await t.queue.getCompletedCount()) === 2);
      });
      const fused = calls.filter((c) => isEndAndCompleteSha(c.args[1]) || isEndCompleteStartSha(c.args[1]));
      expect(fused.map((c) => c.args[0]?.toLowerCase())).toEqual(['evalsha']);
      const bull = fused[0]!.inner.filter(([, key]) => key.startsWith(`${QUEUE_PREFIX}:{runs-`));
      const names = bull.map(([name]) => name);
      // The absent keys' EXISTS (dependencies, unsuccessful, prioritized, pc, delayed: asked with
      // the pool's waiting list by the end's release, so its first key is not the queue's, b95bfd1:
      // the completion's own, after the release's ZCARD, counted in the 6); the job's
      // parent HMGET (with atm and timestamp: its EXISTS, ff4c7cc), the lock's GETDEL (GET and DEL,
      // ff4c7cc; no stalled SREM: e9f77c6 sent it), active LREM, the completed ZADD and HSET (with
      // atm one more: e9f77c6 sent BullMQ's HINCRBY); the retention trim on 1 completion in 64 (3
      // commands); the next fetch, when asked: meta HMGET (below).
      // BullMQ's own: 27.
      const trim = ['zrevrangebyscore', 'zrevrange', 'zremrangebyrank'];
      const untrimmed = names.filter((n) => !trim.includes(n));
      const fetchedNext = isEndCompleteStartSha(fused[0]!.args[1]);
      // The next fetch, when asked: meta's HMGET only; the wait list was empty in that EXISTS, so no
      // RPOPLPUSH (b95bfd1: one, finding none).
      expect(untrimmed.length).toBe(fetchedNext ? 6 : 5);
      expect(names).not.toContain('rpoplpush');
      expect(names.filter((n) => n === 'exists').length).toBe(0);
      const probe = fused[0]!.inner.filter(([name]) => name === 'exists');
      expect(probe.map(([, key]) => key)).toEqual([keys.poolWaiting(mode)]);
      expect(
        fused[0]!.inner.filter(([name, key]) => name === 'zcard' && key === keys.poolWaiting(mode)),
      ).toEqual([]);
      expect(names.filter((n) => ['get', 'del', 'getdel'].includes(n))).toEqual(['getdel']);
      expect(names).not.toContain('hincrby');
      expect(names).not.toContain('srem');
      expect(names.length - untrimmed.length === 0 || names.length - untrimmed.length === 3).toBe(true);
      for (const absent of ['xadd', 'xtrim', 'scard', 'zcard', 'llen', 'zpopmin', 'hget', 'zrangebyscore'])
        expect(names).not.toContain(absent);
      // The fetch (the worker's own here) wrote none either: only the stock add's two entries.
      expect((await redis.xlen(queueKey('events'))) - eventsBefore).toBe(2);
      const job = await t.queue.getJob('c1');
      expect(await job?.getState()).toBe('completed');
      expect(job?.attemptsMade).toBe(1);
      expect(job?.finishedOn).toBeGreaterThan(0);
      expect(await redis.exists(`${queueKey('c1')}:lock`)).toBe(0);
      expect(await redis.llen(queueKey('active'))).toBe(0);
      expect(await redis.hget(keys.run('c1'), 'status')).toBe('Completed');
      // A completed job left in the stalled set (it was active at the last check): BullMQ's stalled
      // check (an older runner's too) leaves it completed, runs nothing again, and drops it.
      await redis.sadd(queueKey('stalled'), 'c1');
      await redis.del(queueKey('stalled-check')); // the runner's own check ran lately
      const checker = new Worker(runQueueName(mode), null, {
        autorun: false,
        connection: { host: '127.0.0.1', port: server.port },
        prefix: QUEUE_PREFIX,
      });
      try {
        const scripts = (checker as unknown as { scripts: { moveStalledJobsToWait(): Promise<string[]> } })
          .scripts;
        expect(await scripts.moveStalledJobsToWait()).toEqual([]);
      } finally {
        await checker.close();
      }
      expect(await job?.getState()).toBe('completed');
      expect(await redis.sismember(queueKey('stalled'), 'c1')).toBe(0);
      expect(await redis.llen(queueKey('wait'))).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('mixed releases on one queue', () => {
  it("a job added by the fused add is run and completed by BullMQ's stock worker (an older runner)", async () => {
    const q = new Queue('qc-mixed', {
      connection: { host: '127.0.0.1', port: server.port },
      prefix: QUEUE_PREFIX,
    });
    handingAdds(q);
    const done: string[] = [];
    const worker = new Worker(
      'qc-mixed',
      async (job) => {
        done.push(job.id ?? '');
        return 'ok';
      },
      { connection: { host: '127.0.0.1', port: server.port }, prefix: QUEUE_PREFIX },
    );
    try {
      for (const id of ['m1', 'm2', 'm3'])
        await q.add('run', { runId: id, tenant: 'acme', enqueuedAtMs: 1 }, runJobOptions(id, 1));
      await until('the stock worker to run all three', async () => (await q.getCompletedCount()) === 3);
      expect(done).toEqual(['m1', 'm2', 'm3']);
      const job = await q.getJob('m2');
      expect(job?.returnvalue).toBe('ok');
      expect(job?.attemptsMade).toBe(1);
      // Its completions are BullMQ's own: their events are there for a QueueEvents reader.
      const events = await redis.xrange(queueKey('events', 'qc-mixed'), '-', '+');
      expect(events.filter(([, f]) => f[1] === 'completed')).toHaveLength(3);
    } finally {
      await worker.close();
      await q.obliterate({ force: true });
      await q.close();
    }
  });
});
