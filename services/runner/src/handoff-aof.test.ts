/**
 * A submit handed at once to an idle worker (one server): what its add propagates. The hand-off's
 * own bookkeeping — the registration's removal from the idle set and its terms, the answer put on
 * the worker's hand-off key — is not in the AOF (nor sent to replicas): the registration never was,
 * and the worker's pop takes the answer in the same event loop turn, its ZPOPMIN propagated after
 * it. The job's and the run's writes are, as before; the start writes no status the record already
 * holds; the AOF replayed holds the run and its job as the server does. Read from the AOF itself;
 * real redis-server, BullMQ, fair share, run store; the submit is the gateway's (run-queue-store.ts).
 */
import { cpSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRedis, keys } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { createRunStore, handOffKeys } from '@islet/runs';
import { aofCommands, newestIncrAof, runFixture, startRedis } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunQueueStore } from '../../gateway/src/run-queue-store.ts';
import { handOff, mode, runnerHarness, until, untilIdle } from '../test/runner-harness.ts';

let redis: Redis;
let dir: string;
const h = runnerHarness('handoff-aof-test');
const { monitor, setUp, warmUp, sealer } = h;
const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;

beforeAll(async () => {
  const started = await h.start();
  redis = started.redis;
  dir = started.server.dir;
  // The harness's server runs without an AOF: turned on here (a rewrite, then an incremental file).
  await redis.config('SET', 'appendonly', 'yes');
  await until('the AOF rewrite', async () => {
    const info = await redis.info('persistence');
    return (
      /aof_enabled:1/.test(info) &&
      /aof_rewrite_in_progress:0/.test(info) &&
      /aof_rewrite_scheduled:0/.test(info)
    );
  });
});
afterAll(() => h.close());

/** The newest incremental AOF file. */
const incrAof = () => newestIncrAof(join(dir, 'appendonlydir'));

/** The AOF's commands (their arguments, the name upper-cased) from byte `from` on. */
const commandsFrom = (file: string, from: number): string[][] =>
  Array.from(aofCommands(readFileSync(file).subarray(from)), ({ args }) => [
    (args[0] ?? '').toUpperCase(),
    ...args.slice(1),
  ]);

describe("a handed submit's add (one server), in the AOF", () => {
  it("propagates the job's and the run's writes, not the registration's removal nor the answer handed", async () => {
    const t = await setUp('aof', true, undefined, { handOff: true });
    const queues = createRunQueueStore(redis, () => undefined, true);
    try {
      await warmUp(t, 'aw');
      await untilIdle(redis, t);
      const worker = t.worker().id;
      const own = handOffKeys(prefix, worker).handOff;
      const file = incrAof();
      const from = statSync(file).size;
      const outcomes = t.outcomes.length;
      const m = await monitor();
      try {
        const run = runFixture('a1', { tenant: 'acme', mode, session: 's', principal: 'p' });
        expect(
          await createRunStore(redis, sealer).create(
            run,
            { maxInFlight: 100, sessionTtlSeconds: 6400, countQueued: true, carriesAdd: true },
            (_counted, ride) => queues.enqueueRun({ runId: run.id, tenant: 'acme', mode, attempts: 1 }, ride),
          ),
        ).toBe('created');
        await until('a1 to complete', async () => t.outcomes.length === outcomes + 1);
      } finally {
        await m.stop();
      }
      // Handed over: the script ran the worker's registration's removal and put the answer on its key.
      const ran = m.seen.map((c) => `${c[0]} ${c[1]}`);
      expect(ran).toContain(`zpopmax ${handOff.idle}`);
      expect(ran).toContain(`zadd ${own}`);
      expect(t.outcomes.at(-1)).toBe('completed 1');
      expect(await redis.hmget(keys.run('a1'), 'attempts', 'status')).toEqual(['1', 'Completed']);

      const written = commandsFrom(file, from);
      const aof = written.map((c) => `${c[0]} ${c[1] ?? ''}`.trim());
      // The job taken as the fetch takes it, its lock, the run's start: propagated.
      expect(aof).toContain(`LPUSH ${prefix}active`);
      expect(aof).toContain(`SET ${prefix}a1:lock`);
      expect(aof).toContain(`HSET ${keys.run('a1')}`);
      // The pop's own effect (a no-op on replay, the answer never propagated).
      expect(aof).toContain(`ZPOPMIN ${own}`);
      // Base 802db19: `ZPOPMAX idle`, `HDEL idle:args` and `ZADD handoff:<worker>` (~1.4 KB) here.
      expect(aof.filter((c) => c.includes(handOff.idle) || c.startsWith(`ZADD ${own}`))).toEqual([]);
      expect(await redis.exists(own)).toBe(0);
      // The record is written once by the create and the start in the same script, the start's
      // count in it (34322bb: the create's HSET, then the start's of `attempts` and `updatedAt`,
      // 125 bytes more; base 802db19: `status Running` in the start's too); then by the end.
      const fieldOf = (c: string[], name: string) => {
        for (let i = 2; i + 1 < c.length; i += 2) if (c[i] === name) return c[i + 1];
        return undefined;
      };
      const records = written.filter((c) => c[0] === 'HSET' && c[1] === keys.run('a1'));
      expect(records.map((c) => fieldOf(c, 'status'))).toEqual(['Running', 'Completed']);
      expect(fieldOf(records[0] ?? [], 'attempts')).toBe('1');
      expect(fieldOf(records[0] ?? [], 'id')).toBe('a1');

      // The AOF replayed on another server (what a restart or a replica holds) has the run, its job
      // and the queue's lists as the server has them, and no hand-off key.
      const replay = await startRedis();
      let again: Redis | undefined;
      try {
        await replay.kill();
        rmSync(join(replay.dir, 'appendonlydir'), { recursive: true, force: true });
        cpSync(join(dir, 'appendonlydir'), join(replay.dir, 'appendonlydir'), { recursive: true });
        await replay.restart();
        again = createRedis(replay.url);
        for (const key of [keys.run('a1'), `${prefix}a1`])
          expect(await again.hgetall(key)).toEqual(await redis.hgetall(key));
        for (const list of ['active', 'wait'])
          expect(await again.lrange(`${prefix}${list}`, 0, -1)).toEqual(
            await redis.lrange(`${prefix}${list}`, 0, -1),
          );
        expect(await again.zscore(`${prefix}completed`, 'a1')).toBe(
          await redis.zscore(`${prefix}completed`, 'a1'),
        );
        expect(await again.exists(own, `${prefix}a1:lock`)).toBe(0);
      } finally {
        again?.disconnect();
        await replay.stop();
      }
    } finally {
      await Promise.all(Object.values(queues.queues).map((q) => q.close()));
      await t.close();
    }
  });
});
