// The bytes a run's record leaves out of the submit's fsync'd write (test/bench/README.md, round
// 36, `aof-trim`), on a real redis-server: what is written, and that readers of this release read
// a record as the previous release wrote it and the previous release's form of the reader reads
// what this one writes (mixed releases).
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { createInFlightStore } from './in-flight-store.ts';
import { foldPendingEnds } from './run-index.ts';
import { usageDay } from './run-index-writes.ts';
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
      // This release's readers (the same code as the previous release's): the store's read, the
      // recovery's head, the attempt's start (the script's flat answer).
      const read = await runs.get('s1');
      expect(read?.seed).toBe('s1');
      expect(read?.attempts).toBe(0);
      expect((await createInFlightStore(redis).head('s1'))?.attempts).toBe(0);
      const begun = await lifecycle.beginAttempt('s1');
      expect(begun.attempt).toBe(1);
      expect(begun.run?.seed).toBe('s1');
      expect(await redis.hget(keys.run('s1'), 'attempts')).toBe('1');
      expect((await runs.get('s1'))?.attempts).toBe(1);
      // A second start counts past the first, as ever.
      expect((await lifecycle.beginAttempt('s1')).attempt).toBe(2);
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
      expect((await createInFlightStore(redis).head('s2'))?.attempts).toBe(0);
      const begun = await lifecycle.beginAttempt('s2');
      expect(begun.attempt).toBe(1);
      expect(begun.run?.seed).toBe('s2');
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

describe("an end's entry in its tenant's pending list", () => {
  it('leaves out counts of 0 and an empty kind; a fold counts both forms alike', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const result = { _tag: 'Completed' as const, value: 1, logs: [] };
      for (const id of ['z1', 'z2']) {
        const run = runFixture(id, { tenant: 'tz' });
        await runs.create(run);
        await runs.finish(run, {
          status: 'Completed',
          result,
          text: '1',
          usage: { bindingCalls: 0, cpuMs: 0 },
        });
      }
      const pending = keys.indexPending('tz');
      const entries = (await redis.lrange(pending, 0, -1)).map(
        (e) => JSON.parse(e) as Record<string, unknown>,
      );
      const ends = entries.filter((e) => e.t === undefined);
      expect(ends.map((e) => e.i)).toEqual(['z1', 'z2']);
      for (const e of ends) {
        expect(e.b).toBeUndefined();
        expect(e.c).toBeUndefined();
        // A Completed run's `none` is not written in format 2 (round 42 `format-next`): its absence is.
        expect(e).not.toHaveProperty('k');
        expect(e.o).toBe(1);
      }
      // z2's entry as the previous release wrote it: every count, zeros too.
      const at = entries.findIndex((e) => e.i === 'z2' && e.t === undefined);
      await redis.lset(pending, at, JSON.stringify({ ...ends[1], b: 0, c: 0 }));
      expect(await foldPendingEnds(redis, 'tz')).toBe(4);
      const usage = await redis.hgetall(keys.usageDay('tz', usageDay(Date.now())));
      expect(usage).toMatchObject({ 'runs:Completed': '2', outputBytes: '2', bindingCalls: '0', cpuMs: '0' });
      const summary = JSON.parse((await redis.hget(keys.indexRunSummaries('tz'), 'z1')) ?? '{}');
      expect(summary).toMatchObject({ status: 'Completed', kind: 'none' });
    });
  });
});
