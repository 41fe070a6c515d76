// The bytes a run's record leaves out of the submit's fsync'd write (test/bench/README.md, round
// 36, `aof-trim`), on a real redis-server: what is written, and that readers of this release read
// a record as the previous release wrote it and the previous release's form of the reader reads
// what this one writes (mixed releases).
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { createRunLifecycle } from './run-lifecycle.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });

/** The previous release's `fromHash` of the seed (run-reads.ts, unchanged since the first release). */
const previousSeed = (h: Record<string, string>) => h.seed ?? h.id;

describe("a run's record without the copy of its id as its seed", () => {
  it('a run seeded by its id is written without `seed`; every reader reads the id as its seed', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const journal = createCallJournal({ redis, sealer });
      const lifecycle = createRunLifecycle({ runs, journal });
      await runs.create(runFixture('s1', { tenant: 't1' }));
      const stored = await redis.hgetall(keys.run('s1'));
      expect(stored.seed).toBeUndefined();
      expect(stored.id).toBe('s1');
      expect(previousSeed(stored)).toBe('s1');
      // This release's readers: the store's read, the attempt's start (the script's flat answer).
      expect((await runs.get('s1'))?.seed).toBe('s1');
      const begun = await lifecycle.beginAttempt('s1');
      expect(begun.attempt).toBe(1);
      expect(begun.run?.seed).toBe('s1');
    });
  });

  it('a record as the previous release wrote it (with `seed`) reads the same', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const journal = createCallJournal({ redis, sealer });
      const lifecycle = createRunLifecycle({ runs, journal });
      await runs.create(runFixture('s2', { tenant: 't1' }));
      const without = await runs.get('s2');
      // What the previous release wrote: the same record with the seed field.
      await redis.hset(keys.run('s2'), 'seed', 's2');
      const withSeed = await runs.get('s2');
      expect(JSON.parse(JSON.stringify(withSeed))).toEqual(JSON.parse(JSON.stringify(without)));
      expect((await lifecycle.beginAttempt('s2')).run?.seed).toBe('s2');
    });
  });

  it('a seed other than the id is kept', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      await runs.create(runFixture('s3', { tenant: 't1', seed: 'other' }));
      expect(await redis.hget(keys.run('s3'), 'seed')).toBe('other');
      expect((await runs.get('s3'))?.seed).toBe('other');
    });
  });
});
