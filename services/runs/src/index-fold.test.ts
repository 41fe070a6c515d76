import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { healthHour } from './health-buckets.ts';
import { createHealthStore } from './health-store.ts';
import { createRunIndex, foldPendingEnds } from './run-index.ts';
import { FOLD_AT, FOLD_MAX } from './run-index-scripts.ts';
import { usageDay } from './run-index-writes.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const result = { _tag: 'Completed' as const, value: 1, logs: [] };

/** Calls of each command Redis ran so far (a script's own commands included), from INFO commandstats. */
async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
}

/** What each command ran between two readings. */
function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, n] of after) if (n - (before.get(name) ?? 0) > 0) out[name] = n - (before.get(name) ?? 0);
  return out;
}

describe("a tenant's pending list of creates and ends, folded", () => {
  it('appends one entry per create and end, and the index, usage and health readers see every run at once', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const index = createRunIndex(redis, sealer);
      const now = Date.now();
      const run = (id: string, session = 's1') =>
        runFixture(id, { tenant: 'tf', session, createdAt: now - 5 });
      const admission = { maxInFlight: 100, sessionTtlSeconds: 60 };
      const before = await commandCalls(redis);
      for (const id of ['a', 'b', 'c']) expect(await runs.create(run(id), admission)).toBe('created');
      expect(
        await runs.finish(run('a'), { status: 'Completed', result, text: 'ab', usage: { cpuMs: 3 } }),
      ).toBe(true);
      expect(await runs.finish(run('b'), { status: 'Failed', result, text: '', kind: 'timeout' })).toBe(true);
      const written = delta(before, await commandCalls(redis));
      // Nothing of the index, usage or health is written per run: one RPUSH per create and end.
      expect(written.rpush).toBe(5);
      // (The two HMGETs are the ends' status guards, the run's own: status, kind and `quiet`.)
      expect(written.hmget).toBe(2);
      for (const name of ['hincrby', 'hget', 'zrangebyscore']) expect(written[name]).toBeUndefined();
      // ZADDs left per run: the admission's in-flight entry and the session's run list.
      expect(written.zadd).toBe(6);
      expect(await redis.llen(keys.indexPending('tf'))).toBe(5);

      // Each reader folds first: lists, sessions, usage, health, summaries.
      const listed = await index.listRuns('tf', { limit: 10 });
      expect(listed.items.map((s) => [s.id, s.status, s.kind ?? ''])).toEqual([
        ['c', 'Running', ''],
        ['b', 'Failed', 'timeout'],
        ['a', 'Completed', 'none'],
      ]);
      expect(await redis.exists(keys.indexPending('tf'))).toBe(0);
      expect(
        (await index.listRuns('tf', { limit: 10, statuses: ['Failed'] })).items.map((s) => s.id),
      ).toEqual(['b']);
      expect((await index.listSessions('tf', { limit: 10 })).items[0]?.runs).toEqual({
        total: 3,
        active: 1,
        Completed: 1,
        Failed: 1,
        Cancelled: 0,
      });
      expect(await runs.finish(run('c'), { status: 'Cancelled', result, text: '' })).toBe(true);
      const [day] = await index.usage('tf', usageDay(Date.now()), usageDay(Date.now()));
      expect(day).toMatchObject({
        runs: { Completed: 1, Failed: 1, Cancelled: 1 },
        outputBytes: 2,
        cpuMs: 3,
      });
      expect((await index.summaries('tf', ['c']))[0]?.status).toBe('Cancelled');
      await runs.finish(run('d'), { status: 'Completed', result, text: '' }); // never created: counts nothing
      const health = await createHealthStore(redis).series({ tenant: 'tf' }, Date.now() - 60_000, Date.now());
      expect(health.totals.runs).toMatchObject({ Completed: 1, Failed: 1, Cancelled: 1 });
      expect(health.totals.failures).toEqual({ timeout: 1 });
      expect(await foldPendingEnds(redis, 'tf')).toBe(0);
    }));

  it('the end that fills the list has it folded, and a fold applies each entry once, across a Redis SIGKILL and restart', async () => {
    const server = await startRedis({ appendFsync: 'always' });
    const redis = new Redis(server.url);
    redis.on('error', () => undefined); // refused while the server is down; it reconnects
    try {
      const runs = createRunStore(redis, sealer);
      const index = createRunIndex(redis, sealer);
      const now = Date.now();
      const run = (id: string) => runFixture(id, { tenant: 'tk', session: 'sk', createdAt: now - 5 });
      // FOLD_AT / 2 runs, each a create and an end: the last end fills the list, and its caller
      // folds it after the end's answer (fold-after-end.test.ts).
      const n = FOLD_AT / 2;
      for (let i = 0; i < n; i++) {
        await runs.create(run(`r${i}`), { maxInFlight: 1000, sessionTtlSeconds: 60 });
        await runs.finish(run(`r${i}`), {
          status: 'Completed',
          result,
          text: 'x',
          usage: { bindingCalls: 1 },
        });
        if (i < n - 1) expect(await redis.llen(keys.indexPending('tk'))).toBe(2 * (i + 1));
      }
      await expect.poll(() => redis.llen(keys.indexPending('tk'))).toBe(0);
      const usageKey = keys.usageDay('tk', usageDay(Date.now()));
      expect(await redis.hget(usageKey, 'runs:Completed')).toBe(String(n));
      expect(await redis.hget(keys.indexSessionStats('tk'), 'sk\nCompleted')).toBe(String(n));
      expect(await redis.zcard(keys.indexRuns('tk'))).toBe(n);
      expect(await redis.zcard(keys.indexRunsEnded('tk'))).toBe(n);

      // Three more ends pending, then Redis is SIGKILLed: the entries came back from the AOF
      // (written with the end), and the fold counts them once however often it runs.
      for (const id of ['x1', 'x2', 'x3']) {
        await runs.create(run(id), { maxInFlight: 1000, sessionTtlSeconds: 60 });
        await runs.finish(run(id), { status: 'Failed', result, text: '', kind: 'exception' });
      }
      await server.kill();
      await server.restart();
      expect(await redis.llen(keys.indexPending('tk'))).toBe(6);
      expect(await foldPendingEnds(redis, 'tk')).toBe(6);
      expect(await foldPendingEnds(redis, 'tk')).toBe(0);
      const [day] = await index.usage('tk', usageDay(Date.now()), usageDay(Date.now()));
      expect(day?.runs).toEqual({ Completed: n, Failed: 3 });
      expect(day?.bindingCalls).toBe(n);
      const health = await redis.hgetall(keys.healthHour('tk', healthHour(Date.now())));
      const failures = Object.entries(health).filter(([f]) => f.endsWith('|k:exception'));
      expect(failures.reduce((s, [, v]) => s + Number(v), 0)).toBe(3);
      expect((await index.listSessions('tk', { limit: 5 })).items[0]?.runs).toMatchObject({
        total: n + 3,
        active: 0,
        Completed: n,
        Failed: 3,
      });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
  it('a create only appends (the admission stays small); the next end past the fold size has creates and ends folded alike', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const run = (id: string) => runFixture(id, { tenant: 'tc', session: 'sc', createdAt: Date.now() });
      for (let i = 0; i < FOLD_AT + 2; i++)
        expect(await runs.create(run(`c${i}`), { maxInFlight: 1000, sessionTtlSeconds: 60 })).toBe('created');
      expect(await redis.llen(keys.indexPending('tc'))).toBe(FOLD_AT + 2);
      expect(await redis.exists(keys.indexRuns('tc'))).toBe(0);
      expect(await runs.finish(run('c0'), { status: 'Completed', result, text: '' })).toBe(true);
      await expect.poll(() => redis.llen(keys.indexPending('tc'))).toBe(0);
      expect(await redis.zcard(keys.indexRuns('tc'))).toBe(FOLD_AT + 2);
      expect(await redis.hget(keys.indexSessionStats('tc'), 'sc\ntotal')).toBe(String(FOLD_AT + 2));
      expect(await redis.hget(keys.indexSessionStats('tc'), 'sc\nCompleted')).toBe('1');
    }));
  it('a fold takes at most FOLD_MAX entries; a reader folds again until the list is empty', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const run = (id: string) => runFixture(id, { tenant: 'tm', session: 'sm', createdAt: Date.now() });
      for (let i = 0; i < FOLD_MAX + 10; i++) await runs.create(run(`m${i}`));
      expect(await redis.llen(keys.indexPending('tm'))).toBe(FOLD_MAX + 10);
      expect(await foldPendingEnds(redis, 'tm')).toBe(FOLD_MAX + 10);
      expect(await redis.exists(keys.indexPending('tm'))).toBe(0);
      expect(await redis.zcard(keys.indexRuns('tm'))).toBe(FOLD_MAX + 10);
      expect(await redis.hget(keys.indexSessionStats('tm'), 'sm\ntotal')).toBe(String(FOLD_MAX + 10));
    }));
});
