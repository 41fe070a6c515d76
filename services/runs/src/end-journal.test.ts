/**
 * An end pushed to its waiter carries the run's journal. When the runner ending the run executed
 * its only attempt and sent no call in it (`sentNoCall`), the journal holds that attempt's count
 * alone and is not read; in every other case it is read as before. Commands counted with
 * `INFO commandstats`, on a real Redis.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { pushedEnd } from '../test/pushed-end.ts';
import { withRedis } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { END_PUSH_FIELDS } from './run-reads.ts';
import { createRunStore } from './run-store.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const result = { _tag: 'Completed' as const, value: 1, logs: [] };
const end = { status: 'Completed' as const, result, text: 'ok' };
const call = (index: number) => ({
  index,
  binding: 'notes.read_note',
  argsJson: JSON.stringify({ n: index }),
});

/** `HGETALL` calls Redis ran so far (a script's own included). */
async function hgetalls(redis: Redis): Promise<number> {
  return Number(/^cmdstat_hgetall:calls=(\d+)/m.exec(await redis.info('commandstats'))?.[1] ?? 0);
}

/** Ends `id` with `sentNoCall`, and returns the pushed end's journal and the end's HGETALLs. */
async function ended(
  redis: Redis,
  id: string,
  sentNoCall: boolean,
): Promise<{ journal: Record<string, string>; record: Record<string, string>; hgetall: number }> {
  const runs = createRunStore(redis, sealer);
  let hgetall = 0;
  const [record, journal] = await pushedEnd(redis, redis, id, async () => {
    const before = await hgetalls(redis);
    expect(await runs.finish(runFixture(id, { tenant: 't1', pushEnd: true }), { ...end, sentNoCall })).toBe(
      true,
    );
    hgetall = (await hgetalls(redis)) - before;
  });
  return { journal: fieldsOf(journal), record: fieldsOf(record), hgetall };
}

describe("a pushed end's journal", () => {
  it('is not read when its runner sent no call in the only attempt; the push is what a read gives', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const journal = createCallJournal({ redis, sealer });
      for (const id of ['n1', 'r1']) {
        await runs.create(runFixture(id, { tenant: 't1', pushEnd: true }));
        expect((await journal.beginAttempt(id, keys.run(id))).attempt).toBe(1);
      }
      // Warm the scripts (their loading is not the end's).
      await runs.create(runFixture('w1', { tenant: 't1', pushEnd: true }));
      await ended(redis, 'w1', true);
      const quiet = await ended(redis, 'n1', true);
      const read = await ended(redis, 'r1', false);
      expect(quiet.hgetall).toBe(1);
      expect(read.hgetall).toBe(2);
      // A first start writes no journal; the quiet end says what an older release's start left (its
      // count alone), the read one what is there: no call either way.
      expect(quiet.journal).toEqual({ '#attempt': '1' });
      expect(await redis.exists(`islet:journal:{n1}`)).toBe(0);
      expect(read.journal).toEqual({});
      expect(journal.callsOf(quiet.journal)).toEqual([]);
      // The record's fields its execution and end wrote (round 41 `push-lean`).
      const stored = await redis.hgetall(keys.run('n1'));
      expect(quiet.record).toEqual(
        Object.fromEntries(Object.entries(stored).filter(([name]) => END_PUSH_FIELDS.includes(name))),
      );
    }));

  it('is read when another attempt began, or a call was sent: every journaled call reaches the waiter', () =>
    withRedis(async (redis) => {
      const runs = createRunStore(redis, sealer);
      const journal = createCallJournal({ redis, sealer });
      // A first attempt journaled a call and stalled; the second attempt's runner sent none.
      await runs.create(runFixture('a2', { tenant: 't1', pushEnd: true }));
      expect((await journal.beginAttempt('a2', keys.run('a2'))).attempt).toBe(1);
      expect((await journal.claim('a2', 1, call(0))).kind).toBe('new');
      expect((await journal.beginAttempt('a2', keys.run('a2'))).attempt).toBe(2);
      const second = await ended(redis, 'a2', true);
      expect(second.hgetall).toBe(2);
      expect(Object.keys(second.journal).sort()).toEqual(['#attempt', '0']);
      expect(journal.callsOf(second.journal).map((c) => c.index)).toEqual([0]);
      // The only attempt sent a call: the runner says so, the journal is read.
      await runs.create(runFixture('c1', { tenant: 't1', pushEnd: true }));
      expect((await journal.beginAttempt('c1', keys.run('c1'))).attempt).toBe(1);
      expect((await journal.claim('c1', 1, call(0))).kind).toBe('new');
      const sent = await ended(redis, 'c1', false);
      expect(sent.hgetall).toBe(2);
      expect(journal.callsOf(sent.journal).map((c) => c.index)).toEqual([0]);
      // A run no attempt began (ended by a cancel, say): its record's `attempts` is not 1.
      await runs.create(runFixture('z0', { tenant: 't1', pushEnd: true }));
      expect((await ended(redis, 'z0', true)).hgetall).toBe(2);
    }));
});
