/**
 * On one server a run whose fetch started it ends in its job's completion (end-complete-store.ts):
 * the run's end (with its lease given back) and BullMQ's moveToFinished are one script call, not
 * the end's script and then BullMQ's. The end is written and its wake-up sent; a completion whose
 * call fails still leaves the run ended once. Real redis-server, real BullMQ, real fair share, run
 * store and journal; the calls are read from MONITOR (their hashes and order), never from time.
 */
import { createHash } from 'node:crypto';
import { channels, createRedis, keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { FINISH_RUN_RELEASE, runJobOptions } from '@islet/runs';
import type { RedisServer } from '@islet/testkit';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { mode, onRunnerHarness, until } from '../test/runner-harness.ts';
import { isEndAndCompleteSha, isEndCompleteStartSha } from './end-complete-store.ts';

let server: RedisServer;
let redis: Redis;
const h = onRunnerHarness('end-complete-test', (up) => {
  ({ server, redis } = up);
});
const { newRun, monitor, setUp, warmUp } = h;

/** BullMQ's own completion script's hash: the call the fused one replaces. */
const COMPLETE_SHA = createHash('sha1').update(moveToFinished.content).digest('hex');

/** The fused call's hashes: without, and with, the next job's start (a completion fetching it, baked or not). */
const fusedCall = (sha: unknown) => isEndAndCompleteSha(sha) || isEndCompleteStartSha(sha);

/** Script hashes a client sent (EVALSHA), in order. */
const shas = (sent: string[][]) => sent.filter((c) => c[0] === 'evalsha').map((c) => c[1] ?? '');

/** The end events of a run's stream. */
async function endEvents(runId: string): Promise<number> {
  const events = await redis.xrange(keys.runEvents(runId), '-', '+');
  return events.filter(([, f]) => f[f.indexOf('type') + 1] === 'end').length;
}

describe("a run's end in its job's completion (one server)", () => {
  it('the end and the completion are one script call: the end written, its waiter woken, the lease given back', async () => {
    const t = await setUp('fused-end', true, undefined, { noteEnds: true });
    const sub = createRedis(server.url);
    try {
      await warmUp(t, 'ew');
      await newRun('e1');
      const heard: string[] = [];
      sub.on('message', (_ch: string, msg: string) => heard.push(msg));
      await sub.subscribe(channels.runEvents);
      const fused = t.worker().fusedCompletions;
      const m = await monitor();
      try {
        await t.add('e1');
        await until('e1 to complete', async () => (await t.queue.getCompletedCount()) === 2);
      } finally {
        await m.stop();
      }
      const sent = shas(m.sent);
      expect(sent.filter(fusedCall)).toHaveLength(1);
      // Neither the end's own script nor BullMQ's completion went on their own.
      expect(sent).not.toContain(FINISH_RUN_RELEASE.sha);
      expect(sent).not.toContain(COMPLETE_SHA);
      expect(t.worker().fusedCompletions).toBe(fused + 1);
      expect(await redis.hget(keys.run('e1'), 'status')).toBe('Completed');
      expect(await endEvents('e1')).toBe(1);
      // The end's answer reaches the run's caller once the fused call answered: this end was written.
      await until('the end told', async () => t.outcomes.filter((o) => o === 'ended true').length === 2);
      await until('the end to be heard', async () => heard.some((h) => h.startsWith('e1')));
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      expect(await redis.zcard(keys.poolTenantLeases(mode, 'acme'))).toBe(0);
    } finally {
      sub.disconnect();
      await t.close();
    }
  });

  it("a job waiting for the slot takes its lease only after the fused call gave the ended run's back: no deferral", async () => {
    // One slot in the pool, one tenant: a lease seen still held means a full pool, and a deferral.
    let hold!: () => void;
    const held = new Promise<void>((r) => {
      hold = r;
    });
    const t = await setUp('fused-order', true, undefined, { slots: 1, hold: held, noteEnds: true });
    try {
      // The fused call reaches Redis late (a busy connection, a slow network): a job let through
      // when it was sent, before its answer, would take its lease first, on another connection.
      // Every command goes through `sendCommand` (a script call with a Buffer argument directly:
      // core's lua-script.ts).
      const client = (await t.worker().client) as unknown as Sending;
      const send = client.sendCommand.bind(client);
      let late = 0;
      client.sendCommand = (command, ...rest) => {
        if (command.name !== 'evalsha' || !fusedCall(command.args[0])) return send(command, ...rest);
        late++;
        return new Promise((r) => setTimeout(r, 100)).then(() => send(command, ...rest));
      };
      for (const id of ['o1', 'o2', 'o3']) await newRun(id);
      await t.queue.addBulk(
        ['o1', 'o2', 'o3'].map((id) => ({
          name: 'run',
          data: { runId: id, tenant: 'acme', enqueuedAtMs: Date.now() },
          opts: runJobOptions(id, 1),
        })),
      );
      await until('o1 to start', async () => (await redis.hget(keys.run('o1'), 'status')) === 'Running');
      hold();
      const deferrals = async () =>
        Number(
          /islet_tenant_share_deferrals_total\{[^}]*\} (\d+)/.exec(
            await t.metrics.registry.getSingleMetricAsString('islet_tenant_share_deferrals_total'),
          )?.[1] ?? 0,
        );
      await until(
        'the three to complete, or one deferred',
        async () => (await deferrals()) > 0 || (await t.queue.getCompletedCount()) === 3,
      );
      expect(await deferrals()).toBe(0);
      expect(await t.queue.getDelayedCount()).toBe(0);
      expect(late).toBeGreaterThanOrEqual(2);
      for (const id of ['o1', 'o2', 'o3']) expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
      expect(t.outcomes.filter((o) => o.startsWith('completed'))).toEqual([
        'completed 1',
        'completed 1',
        'completed 1',
      ]);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await t.close();
    }
  });

  it("with a delayed job queued, the release's one EXISTS finds a key: the waiting list read by ZCARD, the completion probes its other four, the empty wait list is not popped; the run ends and completes once", async () => {
    const t = await setUp('fused-probe', true, undefined, { noteEnds: true });
    try {
      await warmUp(t, 'pw');
      // Another job, delayed an hour: BullMQ's delayed set exists (as with fair-share deferrals).
      await t.queue.add(
        'run',
        { runId: 'later', tenant: 'acme', enqueuedAtMs: Date.now() },
        {
          ...runJobOptions('later', 2),
          delay: 3_600_000,
        },
      );
      await newRun('p1');
      const m = await monitor();
      try {
        await t.add('p1');
        await until('p1 to complete', async () => (await t.queue.getCompletedCount()) === 2);
      } finally {
        await m.stop();
      }
      const waiting = keys.poolWaiting(mode);
      const jobKey = `${QUEUE_PREFIX}:${runQueueName(mode)}:p1`;
      const reads = m.seen
        .filter(
          (c) =>
            (c[0] === 'exists' || c[0] === 'zcard') &&
            (c[1] === waiting || c[1] === `${jobKey}:dependencies`),
        )
        .map((c) => [c[0], c.length - 1, c[1] === waiting ? 'waiting' : c[1]]);
      // b95bfd1: a ZCARD, then the probe of five, then of four. The wait list was empty (named seven
      // times in the EXISTS): no RPOPLPUSH (b95bfd1: one).
      expect(reads).toEqual([
        ['exists', 13, 'waiting'],
        ['zcard', 1, 'waiting'],
        ['exists', 4, `${jobKey}:dependencies`],
      ]);
      const sent = new Set(m.sent);
      const at = m.seen.findIndex((c) => c[0] === 'evalsha' && fusedCall(c[1]));
      expect(at).toBeGreaterThanOrEqual(0);
      const next = m.seen.findIndex((c, i) => i > at && sent.has(c));
      const fused = m.seen.slice(at + 1, next < 0 ? undefined : next);
      expect(fused.filter((c) => c[0] === 'exists').length).toBe(2);
      expect(fused.filter((c) => c[0] === 'rpoplpush')).toEqual([]);
      expect(await redis.hget(keys.run('p1'), 'status')).toBe('Completed');
      expect(await endEvents('p1')).toBe(1);
      expect(await t.queue.getJobState('p1')).toBe('completed');
      expect((await t.queue.getJob('p1'))?.attemptsMade).toBe(1);
      expect(await t.queue.getJobState('later')).toBe('delayed');
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
    } finally {
      await (await t.queue.getJob('later'))?.remove();
      await t.close();
    }
  });

  it("a delayed job come due while the wait list was empty: the completion's fetch promotes it, then pops and starts it (the wait list's absence ends with the push)", async () => {
    let hold!: () => void;
    const held = new Promise<void>((r) => {
      hold = r;
    });
    const t = await setUp('fused-due', true, undefined, { slots: 1, hold: held, noteEnds: true });
    try {
      await newRun('q1');
      await newRun('q2');
      await t.add('q1');
      await until('q1 to start', async () => (await redis.hget(keys.run('q1'), 'status')) === 'Running');
      await t.queue.add(
        'run',
        { runId: 'q2', tenant: 'acme', enqueuedAtMs: Date.now() },
        {
          ...runJobOptions('q2', 2),
          delay: 3_600_000,
        },
      );
      expect(await t.queue.getJobState('q2')).toBe('delayed');
      // Made due (a past score, BullMQ's ms × 4096) without a marker: only a fetch's promotion moves it.
      const [now] = await redis.time();
      const delayed = `${QUEUE_PREFIX}:${runQueueName(mode)}:delayed`;
      expect(await redis.zadd(delayed, 'XX', 'CH', (Number(now) - 60) * 1000 * 4096, 'q2')).toBe(1);
      const starts = t.worker().completionStarts;
      const m = await monitor();
      try {
        hold();
        await until('q2 to complete', async () => (await t.queue.getJobState('q2')) === 'completed');
      } finally {
        await m.stop();
      }
      const wait = `${QUEUE_PREFIX}:${runQueueName(mode)}:wait`;
      const asked = m.seen.find((c) => c[0] === 'exists' && c[1] === keys.poolWaiting(mode));
      // The wait list was absent when asked (the delayed set counted once, under 7) ...
      expect(asked?.slice(7)).toEqual(Array(7).fill(wait));
      // ... and the fetch's promotion pushed q2 there, which the RPOPLPUSH then took.
      const onWait = m.seen.filter((c) => c[1] === wait).map((c) => c[0]);
      expect(onWait.slice(0, 2)).toEqual(['lpush', 'rpoplpush']);
      expect(t.worker().completionStarts).toBe(starts + 1);
      for (const id of ['q1', 'q2']) {
        expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
        expect(await endEvents(id)).toBe(1);
        expect((await t.queue.getJob(id))?.attemptsMade).toBe(1);
      }
    } finally {
      await t.close();
    }
  });

  it("a completion bringing the next job: BullMQ's `result < 0` check reads its answer without joining it into text; the job is read and run as before", async () => {
    const t = await setUp('fused-answer', true, undefined, { slots: 1, noteEnds: true });
    const join = vi.spyOn(Array.prototype, 'join');
    try {
      // A first run fuses the worker's scripts (its first end handed over).
      await warmUp(t, 'nw');
      const scripts = (
        t.worker() as unknown as { scripts: { execCommand: (...a: unknown[]) => Promise<unknown> } }
      ).scripts;
      // The answers the wrapped completion gives BullMQ.
      const exec = scripts.execCommand.bind(scripts);
      const answers: unknown[] = [];
      scripts.execCommand = async (...a: unknown[]) => {
        const answer = await exec(...a);
        if (a[1] === 'moveToFinished') answers.push(answer);
        return answer;
      };
      for (const id of ['n1', 'n2', 'n3']) await newRun(id);
      join.mockClear();
      // Queued together, one slot: each completion but the last brings the next job.
      await t.queue.addBulk(
        ['n1', 'n2', 'n3'].map((id) => ({
          name: 'run',
          data: { runId: id, tenant: 'acme', enqueuedAtMs: Date.now() },
          opts: runJobOptions(id, 1),
        })),
      );
      await until('the three to complete', async () => (await t.queue.getCompletedCount()) === 4);
      const nextJobs = answers.filter((a) => Array.isArray(a) && a.length > 1);
      expect(nextJobs.length).toBeGreaterThanOrEqual(1);
      // Not one of those answers was joined (the base joined each in `result < 0`).
      expect(join.mock.contexts.filter((c) => nextJobs.includes(c))).toEqual([]);
      // The answer's text and number as an array's would be, its elements as Redis gave them.
      const answer = nextJobs[0] as unknown[];
      expect(Number(answer)).toBeNaN();
      expect((answer as unknown as number) < 0).toBe(false);
      expect(String(answer)).toBe([...answer].join());
      for (const id of ['n1', 'n2', 'n3']) expect(await redis.hget(keys.run(id), 'status')).toBe('Completed');
      expect(await endEvents('n2')).toBe(1);
    } finally {
      join.mockRestore();
      await t.close();
    }
  });

  it('a completion whose fused call fails still leaves the run ended, once: the end alone follows', async () => {
    let hold!: () => void;
    const held = new Promise<void>((r) => {
      hold = r;
    });
    const t = await setUp('fused-fail', true, undefined, { hold: held, noteEnds: true });
    try {
      await newRun('x1');
      await t.add('x1');
      await until('x1 to start', async () => (await redis.hget(keys.run('x1'), 'status')) === 'Running');
      // BullMQ's completion writes to the queue's completed set: another type there makes its
      // part of the fused script fail, after the end's part ran.
      const completedKey = `${QUEUE_PREFIX}:${runQueueName(mode)}:completed`;
      await redis.set(completedKey, 'not a sorted set');
      const m = await monitor();
      try {
        hold();
        await until('the end alone', async () => shas(m.sent).includes(FINISH_RUN_RELEASE.sha));
      } finally {
        await m.stop();
      }
      const sent = shas(m.sent);
      const fusedAt = sent.findIndex(fusedCall);
      expect(fusedAt).toBeGreaterThanOrEqual(0);
      expect(sent.indexOf(FINISH_RUN_RELEASE.sha)).toBeGreaterThan(fusedAt);
      expect(await redis.hget(keys.run('x1'), 'status')).toBe('Completed');
      expect(await endEvents('x1')).toBe(1);
      expect(await redis.zcard(keys.poolBusy(mode))).toBe(0);
      // The fused call went as the end was handed over (completeAtEnd); BullMQ's completion met its failure.
      expect(t.worker().completionsAtEnd).toBe(1);
      await redis.del(completedKey);
    } finally {
      await t.close();
    }
  });
});

/** An ioredis client's one way out for a command. */
interface Sending {
  sendCommand(command: { name: string; args: unknown[] }, ...rest: unknown[]): Promise<unknown>;
}
