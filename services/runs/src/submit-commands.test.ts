/**
 * What a submit's admission sends, counted with `INFO commandstats` on a real Redis: a busy
 * session's creates leave its owner as the last refresh left it (no EXPIRE each), and the job's
 * queued count rides in the one-server admission.
 */
import { createSessionStore, generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createRunStore } from './run-store.ts';

const base = { ISLET_SEAL_KEYS: generateSealKey('k1'), ISLET_INTERNAL_TOKEN: 'x'.repeat(24) };

/** Calls of each command Redis ran so far (a script's own commands included). */
async function calls(redis: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm))
    out[m[1] ?? ''] = Number(m[2]);
  return out;
}

describe("a submit's admission on a real redis", () => {
  it("refreshes a busy session's owner once a while, never to less than its retention", async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base));
      // 6400 s to live: a refresh stands 100 s (ownerFreshLua: a 64th, at most an hour).
      const admission = { maxInFlight: 100, sessionTtlSeconds: 6400 };
      const run = (id: string, principal = 'p') => runFixture(id, { tenant: 'ow', session: 's', principal });
      const owner = keys.sessionOwner('ow', 's');
      const fresh = keys.sessionOwnerFresh('ow', 's');
      // Both paths: the one-server script with its enqueue, and the tenant half alone.
      expect(await runs.create(run('a0'), admission, async () => undefined)).toBe('created');
      expect(await redis.get(owner)).toBe('p');
      expect(await redis.ttl(owner)).toBeGreaterThan(6400);
      expect(await redis.ttl(owner)).toBeLessThanOrEqual(6500);
      expect(await redis.ttl(fresh)).toBeLessThanOrEqual(100);
      expect(await redis.ttl(fresh)).toBeGreaterThan(0);
      const before = await calls(redis);
      for (let i = 1; i <= 6; i++)
        expect(await runs.create(run(`a${i}`), admission, i % 2 ? async () => undefined : undefined)).toBe(
          'created',
        );
      const after = await calls(redis);
      // Before, each create sent the owner's EXPIRE: six here.
      expect((after.expire ?? 0) - (before.expire ?? 0)).toBe(0);
      expect((after.set ?? 0) - (before.set ?? 0)).toBe(0);
      expect((after.mget ?? 0) - (before.mget ?? 0)).toBe(6);
      // Still the principal's: another one is refused, and writes nothing of the owner.
      expect(await runs.create(run('b1', 'q'), admission)).toBe('session-taken');
      expect(await redis.get(owner)).toBe('p');
      // Once the mark is gone, the next create refreshes the owner (and marks it) again.
      await redis.expire(owner, 10);
      await redis.del(fresh);
      expect(await runs.create(run('a7'), admission)).toBe('created');
      expect(await redis.ttl(owner)).toBeGreaterThan(6400);
      expect(await redis.exists(fresh)).toBe(1);
      // A claim (a file, a skill) refreshes as far as the admission does.
      await redis.expire(owner, 10);
      expect(await createSessionStore(redis).claim('ow', 's', 'p', 6400)).toBe('p');
      expect(await redis.ttl(owner)).toBeGreaterThan(6400);
    });
  });

  it('a retention too short for a mark refreshes the owner on every create, as before', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base));
      const admission = { maxInFlight: 100, sessionTtlSeconds: 60 };
      const run = (id: string) => runFixture(id, { tenant: 'sh', session: 's', principal: 'p' });
      expect(await runs.create(run('a0'), admission)).toBe('created');
      await redis.expire(keys.sessionOwner('sh', 's'), 5);
      expect(await runs.create(run('a1'), admission)).toBe('created');
      expect(await redis.ttl(keys.sessionOwner('sh', 's'))).toBeGreaterThan(50);
      expect(await redis.ttl(keys.sessionOwner('sh', 's'))).toBeLessThanOrEqual(60);
      expect(await redis.exists(keys.sessionOwnerFresh('sh', 's'))).toBe(0);
    });
  });

  it("counts the job in its pool's queued counts in the one-server admission, refused or not", async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealerFromConfig(base));
      const admission = { maxInFlight: 1, sessionTtlSeconds: 6400, countQueued: true };
      const run = (id: string) => runFixture(id, { tenant: 'pq', session: 's', principal: 'p' });
      const told: boolean[] = [];
      const before = await calls(redis);
      const then = async (counted: boolean) => {
        told.push(counted);
      };
      expect(await runs.create(run('a0'), admission, then)).toBe('created');
      // Refused: its job went out all the same (the caller takes it back with its count).
      expect(await runs.create(run('a1'), admission, then)).toBe('over-quota');
      expect(told).toEqual([true, true]);
      expect(await redis.hget(keys.poolQueued('read-only'), 'pq')).toBe('2');
      const after = await calls(redis);
      expect((after.hincrby ?? 0) - (before.hincrby ?? 0)).toBe(2);
      // Without the flag (fair share off, or not one server): the caller counts, as before.
      expect(await runs.create(run('a2'), { ...admission, countQueued: false, maxInFlight: 10 }, then)).toBe(
        'created',
      );
      expect(told).toEqual([true, true, false]);
      expect(await redis.hget(keys.poolQueued('read-only'), 'pq')).toBe('2');
    });
  });
});
