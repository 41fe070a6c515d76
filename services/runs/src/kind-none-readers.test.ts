/**
 * Readers of a Completed run's end without `kind none` (test/bench/README.md round 41
 * `format-default`, round 40 `format-two` "Found, left" 1): every writer until d92635a stored the
 * record's `kind none` and the end entry's `"k":"none"` (31 B of a run's end); d92635a reads their
 * absence as `none`, so the next release's format 2 stops writing them (round 42 `format-next`,
 * kind-none-writer.test.ts; format 1 still writes them, for a roll from e807b91). On real Redis: the record's reader
 * (run-reads.ts `fromHash`), the pending list's fold (includes/index-fold.lua) and the end that
 * finds its run already final (includes/finish-run.lua: the index records the kind the record kept).
 * Each fails on e807b91's readers.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { completedEnd as completed } from '../test/run-ends.ts';
import { withRedis } from '../test/test-redis.ts';
import { createRunIndex, foldPendingEnds } from './run-index.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const failed = {
  status: 'Failed' as const,
  result: {
    _tag: 'Failed' as const,
    reason: 'Error' as const,
    kind: 'exception' as const,
    message: 'boom',
    logs: [],
  },
  text: 'boom',
  kind: 'exception',
};

describe("a Completed run's end without `kind none`", () => {
  it('a record without `kind` reads as `none` when Completed, and a Failed one keeps its kind', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const done = runFixture('kn-c', { tenant: 't1' });
      const boom = runFixture('kn-f', { tenant: 't1' });
      await runs.create(done);
      await runs.create(boom);
      expect(await runs.finish(done, completed)).toBe(true);
      expect(await runs.finish(boom, failed)).toBe(true);
      // What format 2 writes since round 42 (`format-next`): no `kind` (format 1 still `none`).
      expect(await redis.hget(keys.run('kn-c'), 'kind')).toBeNull();
      expect((await runs.get('kn-c'))?.kind).toBe('none');
      expect((await runs.get('kn-f'))?.kind).toBe('exception');
      // A record not final has no kind, with or without the field.
      const live = runFixture('kn-r', { tenant: 't1' });
      await runs.create(live);
      expect((await runs.get('kn-r'))?.kind).toBeUndefined();
    });
  });

  it('the fold lists a Completed end entry without `k` as `none`, as one with `"k":"none"`', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const at = Date.now();
      // Tenant `with` gets the end entries this release writes, tenant `without` the same without
      // the Completed run's `k`; each run created by the store (its create entry as written).
      for (const [tenant, k] of [
        ['with', true],
        ['without', false],
      ] as const) {
        for (const [n, status, kind] of [
          [0, 'Completed', 'none'],
          [1, 'Failed', 'exception'],
        ] as const) {
          const id = `kn-${tenant}-${n}`;
          await runs.create(runFixture(id, { tenant, session: 's', createdAt: at }));
          const end: Record<string, unknown> = { i: id, s: status, e: String(at + 5), o: 2 };
          if (k || status !== 'Completed') end.k = kind;
          await redis.rpush(keys.indexPending(tenant), JSON.stringify(end));
        }
        await foldPendingEnds(redis, tenant);
      }
      const index = createRunIndex(redis, sealer);
      const listed = async (tenant: string) =>
        (await index.listRuns(tenant, { limit: 10 })).items.map((r) => ({
          ...r,
          id: r.id.replace(tenant, 'x'),
        }));
      const without = await listed('without');
      expect(without.map((r) => [r.status, r.kind])).toEqual(
        expect.arrayContaining([
          ['Completed', 'none'],
          ['Failed', 'exception'],
        ]),
      );
      expect(without).toEqual(await listed('with'));
      const summary = JSON.parse(
        (await redis.hget(keys.indexRunSummaries('without'), 'kn-without-0')) ?? '{}',
      );
      expect(summary).toMatchObject({ status: 'Completed', kind: 'none' });
    });
  });

  it('an end that finds its run Completed without `kind` records `none` in the index, not its own kind', async () => {
    await withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const run = runFixture('kn-late', { tenant: 't2' });
      await runs.create(run);
      expect(await runs.finish(run, completed)).toBe(true);
      // Format 2 left it out already (round 42 `format-next`); format 1 wrote it.
      await redis.hdel(keys.run('kn-late'), 'kind');
      const cancelled = {
        status: 'Cancelled' as const,
        result: {
          _tag: 'Failed' as const,
          reason: 'Cancelled' as const,
          kind: 'abort' as const,
          message: 'x',
          logs: [],
        },
        text: 'x',
        kind: 'abort',
      };
      expect(await runs.finish(run, cancelled)).toBe(false);
      const last = JSON.parse((await redis.lindex(keys.indexPending('t2'), -1)) ?? '{}');
      expect(last).toMatchObject({ i: 'kn-late', s: 'Completed', k: 'none' });
    });
  });
});
