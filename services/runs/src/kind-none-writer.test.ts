/**
 * Format 2 stops writing a Completed run's `kind none` (test/bench/README.md round 42
 * `format-next`): the record's `kind` and its end entry's `"k"` are left out (31 B of the end's
 * fsync'd write), since d92635a reads their absence as `none` (kind-none-readers.test.ts); format 1,
 * the setting for a roll from a release before d92635a, still writes them. Any other kind is
 * written in both. On real Redis, through the run store and the run index (a skill's end). Fails on
 * d92635a, which writes `kind none` in both formats and a skill's end in the default form whatever
 * its setting.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { withRedis } from '../test/test-redis.ts';
import { createRunIndex, foldPendingEnds } from './run-index.ts';
import { createRunStore } from './run-store.ts';
import { storedKind } from './run-store-args.ts';
import type { WriteFormat } from './run-store-types.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const failed = (status: 'Failed' | 'Cancelled', kind: 'timeout' | 'abort') => ({
  status,
  result: { _tag: 'Failed' as const, reason: 'Error' as const, kind, message: 'x', logs: [] },
  text: 'x',
  kind,
});
const ends = {
  completed: {
    status: 'Completed' as const,
    result: { _tag: 'Completed' as const, value: 1, logs: [] },
    text: '1',
  },
  completedNamed: {
    status: 'Completed' as const,
    result: { _tag: 'Completed' as const, value: 1, logs: [] },
    text: '1',
    kind: 'none',
  },
  failed: failed('Failed', 'timeout'),
  cancelled: failed('Cancelled', 'abort'),
};

/** The end entries in `tenant`'s pending list, by run id. */
async function endEntries(redis: Redis, tenant: string): Promise<Record<string, Record<string, unknown>>> {
  const all = (await redis.lrange(keys.indexPending(tenant), 0, -1)).map(
    (e) => JSON.parse(e) as Record<string, unknown>,
  );
  return Object.fromEntries(all.filter((e) => e.t === undefined).map((e) => [e.i as string, e]));
}

describe("an end's stored kind in each format", () => {
  it("`storedKind`: only format 2 leaves out a Completed run's `none`", () => {
    expect(storedKind('Completed', undefined, '2')).toBe('');
    expect(storedKind('Completed', 'none', '2')).toBe('');
    expect(storedKind('Completed', 'none', '1')).toBe('none');
    expect(storedKind('Completed', undefined, '1')).toBe('none');
    expect(storedKind('Failed', 'timeout', '2')).toBe('timeout');
    expect(storedKind('Cancelled', 'abort', '2')).toBe('abort');
  });

  it.each([
    ['2', undefined],
    ['1', 'none'],
  ] as const)(
    'format %s: a Completed record and its end entry store kind %s; a Failed or Cancelled one its own',
    (format, kind) =>
      withRedis(async (redis) => {
        const runs = createRunStore(redis, sealer, { writeFormat: format as WriteFormat });
        const tenant = `t${format}`;
        for (const [name, end] of Object.entries(ends)) {
          const run = runFixture(`${tenant}-${name}`, { tenant });
          await runs.create(run);
          expect(await runs.finish(run, end)).toBe(true);
        }
        const entries = await endEntries(redis, tenant);
        for (const name of ['completed', 'completedNamed']) {
          const id = `${tenant}-${name}`;
          expect(await redis.hget(keys.run(id), 'kind')).toBe(kind ?? null);
          expect(entries[id]?.k).toBe(kind);
          // Read back as `none` either way (run-reads.ts `openEnd`).
          expect((await runs.get(id))?.kind).toBe('none');
        }
        expect(await redis.hget(keys.run(`${tenant}-failed`), 'kind')).toBe('timeout');
        expect(entries[`${tenant}-failed`]?.k).toBe('timeout');
        expect(await redis.hget(keys.run(`${tenant}-cancelled`), 'kind')).toBe('abort');
        expect(entries[`${tenant}-cancelled`]?.k).toBe('abort');
        // Listed alike in both formats.
        await foldPendingEnds(redis, tenant);
        const listed = (await createRunIndex(redis, sealer).listRuns(tenant, { limit: 10 })).items;
        expect(Object.fromEntries(listed.map((s) => [s.id.slice(tenant.length + 1), s.kind]))).toEqual({
          completed: 'none',
          completedNamed: 'none',
          failed: 'timeout',
          cancelled: 'abort',
        });
      }),
  );

  it('a skill\'s end entry takes the index\'s `writeFormat`: `"k":"none"` and its usage day in format 1, neither in 2', () =>
    withRedis(async (redis) => {
      for (const format of ['1', '2'] as const) {
        const tenant = `sk${format}`;
        const index = createRunIndex(redis, sealer, { writeFormat: format });
        await index.skillStarted(tenant, {
          id: `${tenant}-s`,
          description: 'sh skill',
          sessionId: '',
          mode: 'read-only',
          createdAt: Date.now(),
        });
        await index.skillEnded(tenant, `${tenant}-s`, { status: 'Completed', kind: 'none' });
        const entry = (await endEntries(redis, tenant))[`${tenant}-s`];
        if (format === '1') expect(entry).toMatchObject({ s: 'Completed', k: 'none', u: expect.any(String) });
        else {
          expect(entry).toMatchObject({ s: 'Completed' });
          expect(entry).not.toHaveProperty('k');
          expect(entry).not.toHaveProperty('u');
        }
        await foldPendingEnds(redis, tenant);
        const [listed] = (await index.listRuns(tenant, { limit: 10 })).items;
        expect(listed).toMatchObject({ status: 'Completed', kind: 'none' });
      }
    }));
});
