// A run's journal lives as long as its run (round 46 `journal-life`). It used to expire one
// retention after its last write (every claim of a first attempt, every outcome, every later start
// set it) while the run's record had none until the end: a run waiting longer than that (a
// decision's 24 h, a slow App) lost its journal, and a replay after its runner's loss re-sent the
// calls it had answered (a duplicate side effect). Now no writer of a live run's journal sets an
// expiry (lua/claim-1.lua, complete-2.lua, includes/begin-attempt.lua); the run's end gives it the
// record's (includes/transition.lua, as 9f886855's end does), and a claim that creates it after the
// end (no call before: the end had none to expire) takes the record's. The first test fails on
// 9f886855 (the replay finds no journal and claims the answered call `new`: sent again).
import { generateSealKey, keys, type Redis, sealerFromConfig } from '@islet/core';
import type { BindingOutcome } from '@islet/protocol';
import { runFixture } from '@islet/testkit';
import { describe, expect, it } from 'vitest';
import { completedEnd as end } from '../test/run-ends.ts';
import { onRedisServer } from '../test/test-redis.ts';
import { createCallJournal } from './call-journal.ts';
import { journalKeys } from './keys.ts';
import { createRunStore } from './run-store.ts';
import { createRunTransitions } from './run-transitions.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
/** The retention, seconds: short, so a wait outlives it. */
const SHORT = 1;
const outcome: BindingOutcome = { type: 'result', valueJson: '{"paid":true}' };
const pay = { index: 0, binding: 'bank.pay', argsJson: '{"to":"x","cents":100}' };

let redis: Redis;
onRedisServer((client) => {
  redis = client;
});

const journalOf = journalKeys().journal;
const pttl = (key: string) => redis.pttl(key);
const expiresAt = (key: string) => redis.call('PEXPIRETIME', key) as Promise<number>;
/**
 * The journal's expiry is the record's: set by the same end script after the record's, or from the
 * record's PTTL read a moment before, so at the record's instant or after it (Redis 7.0 reads its
 * clock for each command even inside a script). Before round 46 a claim or outcome of a live run set
 * one retention from its write: the `-1` checks above tell that apart.
 */
async function expectJournalWithRecord(id: string) {
  const [journalAt, recordAt] = await Promise.all([expiresAt(journalOf(id)), expiresAt(keys.run(id))]);
  expect(recordAt).toBeGreaterThan(0);
  expect(journalAt).toBeGreaterThanOrEqual(recordAt);
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const runs = () => createRunStore(redis, sealer, { retentionSeconds: SHORT });
const journalWith = () => createCallJournal({ redis, sealer, ttlSeconds: SHORT });
const waiting = () =>
  createRunTransitions(redis, {
    maxEvents: '1000',
    retention: String(SHORT),
    seal: (v) => sealer.seal(JSON.stringify(v)),
  });

/** A run created and begun (its first attempt), its first call made and answered. */
async function answeredCall(id: string) {
  const store = runs();
  const run = runFixture(id, { tenant: 't1' });
  await store.create(run);
  const journal = journalWith();
  expect((await journal.beginAttempt(id, keys.run(id))).attempt).toBe(1);
  expect((await journal.claim(id, 1, { ...pay, sendNow: true })).kind).toBe('new');
  expect(await journal.complete(id, 0, outcome)).toEqual({ deliverySeq: 1, stored: true });
  return { store, run, journal };
}

describe("a run's journal while the run lives", () => {
  it('outlives a wait past the retention: the replay after a runner loss answers the call from it, not sent again', async () => {
    const id = 'waits-past-retention';
    const { store, run, journal } = await answeredCall(id);
    // The run waits (as on a decision): its record has no expiry (nor has its journal, below).
    const { transition } = waiting();
    expect(
      await transition(
        { id, tenant: 't1' },
        { status: 'Waiting' },
        { type: 'status', data: { status: 'Waiting' } },
      ),
    ).toBe(true);
    expect(await pttl(keys.run(id))).toBe(-1);
    // Past the retention, the runner lost: its replay (the next attempt) reads the journal.
    await sleep(SHORT * 1000 + 1_200);
    const replay = await journal.beginAttempt(id, keys.run(id));
    expect(replay.attempt).toBe(2);
    expect(replay.entries.map((e) => [e.index, e.state])).toEqual([[0, 'done']]);
    // The answered call is answered again from the journal, not claimed to be sent again.
    expect(await journal.claim(id, 2, { ...pay, sendNow: true })).toEqual({
      kind: 'done',
      outcome,
      deliverySeq: 1,
    });
    expect(await pttl(journalOf(id))).toBe(-1);
    // The end expires it with the record.
    expect(await store.finish({ ...run, pushEnd: true }, end)).toBe(true);
    await expectJournalWithRecord(id);
  });

  it('no writer sets an expiry: a claim, an outcome, a mark, a later start (which takes off an expiry a 9f886855 writer set)', async () => {
    const id = 'every-writer';
    const { journal } = await answeredCall(id);
    expect(await pttl(journalOf(id))).toBe(-1);
    expect((await journal.claim(id, 1, { index: 1, binding: 'bank.read', argsJson: '{}' })).kind).toBe('new');
    await journal.markSent(id, 1);
    expect(await pttl(journalOf(id))).toBe(-1);
    // 9f886855's claim and outcome set one retention from their write.
    await redis.expire(journalOf(id), 3600);
    expect((await journal.complete(id, 1, outcome)).stored).toBe(true);
    expect(await pttl(journalOf(id))).toBeGreaterThan(0);
    expect((await journal.beginAttempt(id, keys.run(id))).attempt).toBe(2);
    expect(await pttl(journalOf(id))).toBe(-1);
    expect((await journal.claim(id, 2, { index: 2, binding: 'bank.read', argsJson: '{}' })).kind).toBe('new');
    expect(await journal.complete(id, 2, outcome)).toMatchObject({ stored: true });
    expect(await pttl(journalOf(id))).toBe(-1);
  });

  it("a claim creating the journal after the run's end takes the record's expiry; with no record, a minute's", async () => {
    const id = 'claimed-after-end';
    const store = createRunStore(redis, sealer, { retentionSeconds: 3600 });
    const run = runFixture(id, { tenant: 't1' });
    await store.create(run);
    const journal = journalWith();
    expect((await journal.beginAttempt(id, keys.run(id))).attempt).toBe(1);
    // Ended (cancelled, say) before its execution's first call: no journal for the end to expire.
    expect(await store.finish({ ...run, pushEnd: true }, { ...end, sentNoCall: true })).toBe(true);
    expect(await redis.exists(journalOf(id))).toBe(0);
    // The execution, still going, claims: its journal goes with the record, not never.
    expect((await journal.claim(id, 1, { ...pay, sendNow: true })).kind).toBe('new');
    await expectJournalWithRecord(id);
    expect((await journal.complete(id, 0, outcome)).stored).toBe(true);
    await expectJournalWithRecord(id);
    // A run whose record is gone (past retention): its journal a minute, no more.
    const gone = 'no-record';
    expect((await journal.claim(gone, 1, { ...pay, sendNow: true })).kind).toBe('new');
    const left = await pttl(journalOf(gone));
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(60_000);
  });
});
