// A run's journal expires with its events (includes/transition.lua): a `call` event's one-seal form
// (ISLET_CALL_ONE_SEAL, on by default since round 45) holds its call's index alone, its data read
// from the journal (call-event-reads.ts), so the journal must not go before the stream. Before
// round 45 the journal kept the expiry its last claim or complete set, and a run's end gave the
// record and events theirs (retention from the end): the events outlived the journal by the run's
// time after its last call, and read only `{index, durationMs}` then. Every end path is here: the
// one-server end script (finish-run-14, whose include finish-run-release-19 and
// endCompleteStartScript share), pushed or not, and the Cluster's transition-4. Fails on 9ec25e04
// (the journal keeps its earlier expiry).
import { generateSealKey, type Redis, sealerFromConfig } from '@islet/core';
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
const RETENTION = 3600;
const outcome: BindingOutcome = { type: 'result', valueJson: '{"ok":true}' };

let redis: Redis;
onRedisServer((client) => {
  redis = client;
});

const store = () => createRunStore(redis, sealer, { callOneSeal: true, retentionSeconds: RETENTION });
const journalOf = journalKeys().journal;
const eventsOf = (id: string) => `islet:run:{${id}}:events`;
const recordOf = (id: string) => `islet:run:{${id}}`;

/** A run created, one call journaled with its one-seal event, its journal's expiry set `shortMs` away. */
async function runWithCall(id: string, shortMs: number) {
  const runs = store();
  const run = runFixture(id, { tenant: 't1' });
  await runs.create(run);
  const journal = createCallJournal({ redis, sealer, ttlSeconds: RETENTION });
  const call = { index: 0, binding: 'echo.say', argsJson: '{"w":1}' };
  const started = process.hrtime.bigint();
  expect((await journal.claim(id, 1, { ...call, sendNow: true })).kind).toBe('new');
  const event = runs.callEvent(id, () => ({}), started);
  expect((await journal.complete(id, 0, outcome, event)).stored).toBe(true);
  // The call was made long before the end: its journal's expiry is that much nearer than retention.
  await redis.pexpire(journalOf(id), shortMs);
  return { runs, run };
}

/** EXPIRE calls Redis has run (scripts' included). */
const expireCalls = async () =>
  Number(/cmdstat_expire:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);

const expiries = async (id: string) =>
  Promise.all([
    redis.call('PEXPIRETIME', recordOf(id)),
    redis.call('PEXPIRETIME', eventsOf(id)),
    redis.call('PEXPIRETIME', journalOf(id)),
  ]) as Promise<[number, number, number]>;

/**
 * `later` expires at `earlier`'s instant or after it, never before: EXPIREs sent one after the other
 * in one script (Redis 7.0, Debian's, reads its clock for each, even inside a script, so a script
 * straddling a millisecond gives them different instants; 7.2 freezes it). The journal's own expiry
 * before the end (`runWithCall`, 5 s away) is long before the events' (the retention, an hour): a
 * journal the end left alone fails here.
 */
function expectAfter(earlier: number, later: number) {
  expect(earlier).toBeGreaterThan(0);
  expect(later).toBeGreaterThanOrEqual(earlier);
}

describe("a run's journal at its end", () => {
  it('expires with the record and events, at or after their instant, on the one-server end (pushed or not)', async () => {
    for (const pushEnd of [false, true]) {
      const id = `one-${pushEnd}`;
      const { runs, run } = await runWithCall(id, 5_000);
      expect(await runs.finish({ ...run, pushEnd }, end)).toBe(true);
      const [record, events, journal] = await expiries(id);
      expect(record).toBeGreaterThan(Date.now() + (RETENTION - 60) * 1000);
      expectAfter(record, events);
      expectAfter(events, journal);
      // The event reads its call whole after the end.
      const call = (await runs.readEvents(id)).find((e) => e.type === 'call');
      expect(call?.data).toMatchObject({ index: 0, binding: 'echo.say', arguments: { w: 1 } });
    }
  });

  it("expires with them on the Cluster's end (transition-4), pushed or not; a status short of an end leaves it", async () => {
    for (const pushEnd of [false, true]) {
      const id = `cluster-${pushEnd}`;
      await runWithCall(id, 5_000);
      const { transition } = createRunTransitions(redis, {
        maxEvents: '1000',
        retention: String(RETENTION),
        seal: (v) => sealer.seal(JSON.stringify(v)),
      });
      const run = { id, tenant: 't1', pushEnd };
      const own = (await expiries(id))[2];
      // Waiting is no end: the journal keeps its own expiry, the record and events none.
      expect(
        await transition(run, { status: 'Waiting' }, { type: 'status', data: { status: 'Waiting' } }),
      ).toBe(true);
      const waiting = await expiries(id);
      expect(waiting.slice(0, 2)).toEqual([-1, -1]);
      expect(waiting[2]).toBe(own);
      expect(
        await transition(run, { status: 'Cancelled' }, { type: 'end', data: { status: 'Cancelled' } }),
      ).toBe(true);
      const [record, events, journal] = await expiries(id);
      expect(record).toBeGreaterThan(Date.now() + (RETENTION - 60) * 1000);
      expectAfter(record, events);
      expectAfter(events, journal);
    }
  });

  it("a call claimed and completed after the end keeps the journal's life the events'", async () => {
    const id = 'late';
    const { runs, run } = await runWithCall(id, 5_000);
    // A writer's own expiry (9f886855's claim and complete set it from their write) far past the end's:
    // the journal must not take it.
    const journal = createCallJournal({ redis, sealer, ttlSeconds: 2 * RETENTION });
    expect(await runs.finish(run, end)).toBe(true);
    // The earliest instant a writer's own expiry could be: two retentions from now.
    const writerFloor = Date.now() + 2 * RETENTION * 1000;
    expect(
      (await journal.claim(id, 1, { index: 1, binding: 'echo.say', argsJson: '{}', sendNow: true })).kind,
    ).toBe('new');
    await journal.complete(
      id,
      1,
      outcome,
      runs.callEvent(id, () => ({}), process.hrtime.bigint()),
    );
    // Round 46: no outcome sets an expiry (a live run's journal has none); the late claim gives the
    // journal the record's remaining life (claim-1.lua: its run has ended; its PTTL read, then set, so
    // at the record's instant or after), not a writer's own (two retentions from its write).
    const [record, , after] = await expiries(id);
    expectAfter(record, after);
    expect(after).toBeLessThan(writerFloor);
  });

  it('an end with no call made sends no expiry for a journal that does not exist, pushed or not', async () => {
    // Not pushed: round 46 (`pushArg` '5'); 9f886855 sent the EXPIRE there. A claim creating the
    // journal after such an end takes the record's expiry (journal-life.test.ts).
    for (const pushEnd of [true, false]) {
      const id = `no-call-${pushEnd}`;
      const runs = store();
      const run = runFixture(id, { tenant: 't1' });
      await runs.create(run);
      // Begun as a runner begins its first attempt: the record counts it, the journal is not written.
      await redis.hset(recordOf(id), 'attempts', '1');
      const before = await expireCalls();
      await runs.finish({ ...run, pushEnd }, { ...end, sentNoCall: true });
      // The record's, the events' and (round 48, whether the run asked or not) the decisions'.
      expect((await expireCalls()) - before).toBe(3);
      expect(await redis.exists(journalOf(id))).toBe(0);
    }
    // A later attempt's start wrote the journal (`#attempt`): the end expires it, no call or not.
    const id = 'no-call-second';
    const runs = store();
    const run = runFixture(id, { tenant: 't1' });
    await runs.create(run);
    await redis.hset(recordOf(id), 'attempts', '2');
    await redis.hset(journalOf(id), '#attempt', '2');
    await runs.finish(run, { ...end, sentNoCall: true });
    expect(await redis.call('PEXPIRETIME', journalOf(id))).toBe(
      await redis.call('PEXPIRETIME', recordOf(id)),
    );
  });
});
