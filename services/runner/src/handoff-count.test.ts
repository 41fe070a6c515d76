/**
 * A submit handed at once to an idle worker (one server): what its add held back. Its job's count
 * in the pool's queued counts is neither written nor taken off (the lease of the same script would
 * take it off again), and its push onto the wait list and the fetch's move from there to active
 * are one push onto active. Every other way out writes both as before. Read from MONITOR and the
 * keys; real redis-server, BullMQ, fair share, run store; the submit is the gateway's (the
 * admission with the hand-off's add, run-queue-store.ts).
 */
import { keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { createRunStore, handOffKeys } from '@islet/runs';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRunQueueStore } from '../../gateway/src/run-queue-store.ts';
import {
  handOff,
  mode,
  onRunnerHarness,
  type RunnerUnderTest,
  until,
  untilIdle,
} from '../test/runner-harness.ts';
import { editedTerms } from '../test/stored-terms.ts';

let redis: Redis;
const h = onRunnerHarness('handoff-count-test', (up) => {
  ({ redis } = up);
});
const { monitor, setUp, warmUp, sealer } = h;
const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;
const idleKey = handOff.idle;
const idleArgsKey = handOff.idleArgs;

const idle = (t: RunnerUnderTest) => untilIdle(redis, t);

/** The gateway's submit (runs-service.ts): admission, record, queued count and the add in one call. */
function submit(queues: ReturnType<typeof createRunQueueStore>, id: string) {
  const run = runFixture(id, { tenant: 'acme', mode, session: 's', principal: 'p' });
  return createRunStore(redis, sealer).create(
    run,
    { maxInFlight: 100, sessionTtlSeconds: 6400, countQueued: true, carriesAdd: true },
    (_counted, ride) => queues.enqueueRun({ runId: run.id, tenant: 'acme', mode, attempts: 1 }, ride),
  );
}

/** The commands the submit's call ran (`name key`), from its EVAL(SHA) to the next command a client sent. */
function submitCommands(m: { seen: string[][]; sent: string[][] }): string[] {
  const sent = new Set(m.sent);
  const at = m.seen.findLastIndex((c) => c[0]?.startsWith('eval') && c[3] === keys.inFlight('acme'));
  expect(at).toBeGreaterThanOrEqual(0);
  const next = m.seen.findIndex((c, i) => i > at && sent.has(c));
  return m.seen.slice(at + 1, next < 0 ? undefined : next).map((c) => `${c[0]} ${c[1]}`);
}

describe("a handed submit's add (one server)", () => {
  it('writes no queued count of its job and takes none off, and pushes the job once, onto active', async () => {
    const t = await setUp('uncounted', true, undefined, { handOff: true });
    const queues = createRunQueueStore(redis, () => undefined, true);
    const queued = keys.poolQueued(mode);
    try {
      await warmUp(t, 'uw');
      // The tenant with no job counted (the common case), then with three of another kind counted.
      for (const [id, before, after] of [
        ['u1', undefined, {}],
        ['u2', '3', { acme: '3' }],
      ] as const) {
        await idle(t);
        if (before) await redis.hset(queued, 'acme', before);
        const outcomes = t.outcomes.length;
        const m = await monitor();
        try {
          expect(await submit(queues, id)).toBe('created');
          await until(`${id} to complete`, async () => t.outcomes.length === outcomes + 1);
        } finally {
          await m.stop();
        }
        const inner = submitCommands(m);
        expect(inner.filter((c) => c.startsWith('zadd ') && c.includes(':handoff:'))).toHaveLength(1);
        // 724a10f: `hincrby <queued>` at the admission, then `hdel <queued>` (or `hincrby -1`) in the lease.
        expect(inner.filter((c) => c.endsWith(` ${queued}`) && !c.startsWith('hrandfield'))).toEqual([]);
        // 724a10f: `lpush <wait>` in the add, then `rpoplpush <wait>` in the fetch.
        expect(inner.filter((c) => c.endsWith(` ${prefix}wait`))).toEqual([]);
        expect(inner.filter((c) => c.startsWith('lpush '))).toEqual([`lpush ${prefix}active`]);
        // The record written once, its start in it (34322bb: the create's HSET, then the start's).
        expect(inner.filter((c) => c === `hset ${keys.run(id)}`)).toHaveLength(1);
        expect(await redis.hgetall(queued)).toEqual(after);
        expect(t.outcomes.at(-1)).toBe('completed 1');
        expect(await redis.hmget(keys.run(id), 'attempts', 'status')).toEqual(['1', 'Completed']);
        expect(await redis.hget(`${prefix}${id}`, 'ats')).toBe('1');
        await redis.del(queued);
      }
    } finally {
      await Promise.all(Object.values(queues.queues).map((q) => q.close()));
      await t.close();
    }
  });

  it('whose fetch takes no job (rate limited): the job counted queued and waiting, its marker set, the registration kept', async () => {
    const t = await setUp('limited', true, undefined, { handOff: true });
    const queues = createRunQueueStore(redis, () => undefined, true);
    const queued = keys.poolQueued(mode);
    // A registration no worker pops (the worker's, copied under another id, the worker closed): its
    // blocking pop would take the marker and the registration away.
    const id = 'limited-dead';
    try {
      await warmUp(t, 'lw');
      await idle(t);
      const stored = (await redis.hget(idleArgsKey, t.worker().id)) ?? '{}';
      await t.close();
      const now = Number((await redis.time())[0]) * 1000;
      await redis.zadd(idleKey, now + 60_000, id);
      await redis.hset(idleArgsKey, id, editedTerms(stored, { handOff: handOffKeys(prefix, id).handOff }));
      const score = await redis.zscore(idleKey, id);
      // BullMQ's global rate limit, spent: its fetch answers before it takes any job.
      await redis.hset(`${prefix}meta`, 'max', 1, 'duration', 60_000);
      await redis.set(`${prefix}limiter`, 5, 'PX', 60_000);
      const m = await monitor();
      try {
        expect(await submit(queues, 'l1')).toBe('created');
      } finally {
        await m.stop();
      }
      const inner = submitCommands(m);
      // No start took the record: written at the script's end, as an admitted create writes it alone.
      expect(inner.filter((c) => c === `hset ${keys.run('l1')}`)).toHaveLength(1);
      const record = await redis.hgetall(keys.run('l1'));
      // As created: not started (its count 0, its time the create's), every field there — format
      // 2's, the store's default (the program with its request as `pick`; no `clockMs` equal to
      // `createdAt`, read back as it, run-reads.ts).
      expect(record.attempts).toBe('0');
      expect(record.updatedAt).toBe(record.createdAt);
      for (const name of ['pick', 'description', 'session', 'turn', 'callId', 'principal'])
        expect(record[name]).toBeTruthy();
      expect([record.code, record.request, record.clockMs]).toEqual([undefined, undefined, undefined]);
      expect(record.id).toBe('l1');
      expect(record.status).toBe('Running');
      expect(await createRunStore(redis, sealer).get('l1')).toMatchObject({
        id: 'l1',
        seed: 'l1',
        attempts: 0,
        clockMs: Number(record.createdAt),
      });
      expect(inner).toContain(`hincrby ${queued}`);
      expect(inner).toContain(`lpush ${prefix}wait`);
      expect(await redis.hgetall(queued)).toEqual({ acme: '1' });
      expect(await redis.lrange(`${prefix}wait`, 0, -1)).toEqual(['l1']);
      expect(await redis.zscore(`${prefix}marker`, '0')).not.toBeNull();
      expect(await redis.zscore(idleKey, id)).toBe(score);
      expect(await redis.hget(idleArgsKey, id)).not.toBeNull();
      expect(await redis.hget(keys.run('l1'), 'attempts')).toBe('0');
    } finally {
      await redis.hdel(`${prefix}meta`, 'max', 'duration');
      await redis.del(`${prefix}limiter`, queued);
      await redis.zrem(idleKey, id);
      await redis.hdel(idleArgsKey, id);
      await Promise.all(Object.values(queues.queues).map((q) => q.close()));
      await t.close();
    }
  });
});
