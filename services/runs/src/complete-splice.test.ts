/**
 * The outcome script rewrites a journal entry as text (lua/complete-2.lua, round 44
 * `outcome-script`): the stored bytes keep the claim's key order and end in `o`, `seq`, `t1`, where
 * e8feb7a0 (the previous release) re-encoded the whole entry with cjson. Real redis-server. From
 * the same journal (one DUMP restored under two runs), this release's script and e8feb7a0's own
 * (its text from `git show e8feb7a0:…`) store the same values and answer the same; e8feb7a0's
 * readers (its journal-views.ts, its claim, mark-sent and outcome scripts) read the new bytes as
 * the old; a time cjson would round or an outcome it would escape keeps cjson's bytes exactly.
 */
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { previousJournalViews, previousScript } from '../test/previous-runs.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';
import { CLAIM, COMPLETE, MARK_SENT } from './journal-scripts.ts';
import type { WriteFormat } from './run-store-types.ts';

const PREVIOUS = 'e8feb7a0';
const PREV_COMPLETE = previousScript(PREVIOUS, 'lua/complete-2.lua', { COMPLETE_FIELDS: '5' });
const PREV_CLAIM = previousScript(PREVIOUS, 'lua/claim-1.lua', { CLAIM_FIELDS: '13' });
const PREV_MARK_SENT = previousScript(PREVIOUS, 'lua/mark-sent-1.lua');

let prevViews: Awaited<ReturnType<typeof previousJournalViews>>;
const sealer = createTestSealer();
const T = 1765062000123;
const source = { connectionId: 'c-1', connectionName: 'notes', name: 'read_note', kind: 'tool' as const };

/** Claims calls 0 (sent, with a source), 1 (pending, none) and 2 (sent) of `run` in `layout`. */
async function claimed(redis: Redis, run: string, layout: WriteFormat) {
  const journal = createCallJournal({ redis, sealer, writeFormat: layout, now: () => T - 50 });
  await journal.claim(run, 1, {
    index: 0,
    binding: 'notes.read',
    argsJson: '{"t":"ü/\\""}',
    source,
    sendNow: true,
  });
  await journal.claim(run, 1, { index: 1, binding: 'notes.list', argsJson: '{}' });
  await journal.claim(run, 1, {
    index: 2,
    binding: 'notes.read',
    argsJson: '{"n":2}',
    source,
    sendNow: true,
  });
  return journal;
}

/** The journal of `run` restored under `copy` (the same bytes), both keys. */
async function copied(redis: Redis, run: string, copy: string): Promise<[string, string]> {
  const [a, b] = [`islet:journal:{${run}}`, `islet:journal:{${copy}}`];
  await redis.restore(b, 0, (await redis.dumpBuffer(a)) as Buffer);
  return [a, b];
}

/**
 * One group's arguments: `[field, outcome, time]` each, with or without an event stream, in this
 * release's 6 fields a call (the event's sealed form: its `eventMs` empty) or e8feb7a0's 5 (`prev`).
 */
function groupArgs(calls: [string, string, string][], event?: string, prev = false): (string | number)[] {
  // 9ec25e04's and e8feb7a0's scripts take the journal's ttl first; this release's none (round 46).
  const args: (string | number)[] = event ? [100, 'chan', `${event} call`] : [];
  if (prev) args.unshift(3600);
  for (const [field, outcome, time] of calls) {
    args.push(field, outcome, time, event ? 'call' : '', event ? `data-${field}` : '');
    if (!prev) args.push('');
  }
  return args;
}

/** `[name, value, …]` as a pushed `end3` carries it: entries spliced as JSON, counters as strings. */
function end3Parse(all: Record<string, string>): unknown[] {
  const parts = Object.entries(all)
    .filter(([name]) => !name.startsWith('#c'))
    .map(([name, v]) => `"${name}",${name.startsWith('#') && !name.startsWith('#s:') ? `"${v}"` : v}`);
  return JSON.parse(`[${parts.join(',')}]`) as unknown[];
}

describe('the outcome script rewrites an entry as text, read by e8feb7a0 as its own', () => {
  const r = useSuiteRedis();
  beforeAll(async () => {
    // e8feb7a0's readers of a journal, as that release has them (its types are type-only imports).
    prevViews = await previousJournalViews(PREVIOUS, sealer);
  });

  for (const layout of ['1', '2'] as const)
    it(`layout ${layout}: the same values and answers as e8feb7a0's script, in the claim's key order`, async () => {
      const run = `splice-${layout}-${Date.now()}`;
      await claimed(r.a, run, layout);
      const [a, b] = await copied(r.a, run, `${run}-prev`);
      const before = await r.a.hgetall(a);
      const o = [sealer.seal('{"type":"result","valueJson":"1"}'), sealer.seal('{"type":"error"}')];
      // 0 and 1 stored, 7 never claimed, 0 again in the same group (kept), with their events.
      const calls: [string, string, string][] = [
        ['0', o[0] as string, String(T)],
        ['1', o[1] as string, String(T + 1)],
        ['7', o[0] as string, String(T)],
        ['0', o[1] as string, String(T + 2)],
      ];
      const [sa, sb] = [`${a}:events`, `${b}:events`];
      const now = await COMPLETE.run(r.a, [a, sa], groupArgs(calls, 'a'));
      const old = await PREV_COMPLETE.run(r.a, [b, sb], groupArgs(calls, 'b', true));
      expect(now).toEqual([['stored', '1'], ['stored', '2'], ['missing'], ['kept', '1']]);
      expect(now).toEqual(old);
      const [na, nb] = [await r.a.hgetall(a), await r.a.hgetall(b)];
      expect(Object.keys(na).sort()).toEqual(Object.keys(nb).sort());
      for (const field of Object.keys(na)) {
        if (field.startsWith('#')) expect(na[field]).toBe(nb[field]);
        else expect(JSON.parse(na[field] as string)).toEqual(JSON.parse(nb[field] as string));
      }
      // The text path: the claim's bytes, its state spliced, then o, seq, t1 (e8feb7a0's cjson
      // reorders the keys: the same length, other bytes).
      expect(na['0']).toBe(
        `${before['0']?.replace('"st":"sent"', '"st":"done"').slice(0, -1)},"o":"${o[0]}","seq":1,"t1":${T}}`,
      );
      expect(na['1']).toBe(
        `${before['1']?.replace('"st":"pending"', '"st":"done"').slice(0, -1)},"o":"${o[1]}","seq":2,"t1":${T + 1}}`,
      );
      expect(na['0']).not.toBe(nb['0']);
      expect(na['0']?.length).toBe(nb['0']?.length);
      expect(na['2']).toBe(nb['2']);
      // The events: one a stored outcome, in order, and one wake-up.
      const events = async (key: string) => (await r.a.xrange(key, '-', '+')).map(([, f]) => f);
      expect(await events(sa)).toEqual([
        ['type', 'call', 'data', 'data-0'],
        ['type', 'call', 'data', 'data-1'],
      ]);
      expect(await events(sb)).toEqual(await events(sa));

      // e8feb7a0's readers in JavaScript: the journal read whole, and pushed as end2 and end3.
      expect(prevViews.entriesOf(na)).toEqual(prevViews.entriesOf(nb));
      expect(prevViews.callsOf(na)).toEqual(prevViews.callsOf(nb));
      const viewsA = prevViews.callsOf(na);
      expect(viewsA.map((v) => [v.index, v.state, v.deliverySeq, v.settledAtMs])).toEqual([
        [0, 'done', 1, T],
        [1, 'done', 2, T + 1],
        [2, 'sent', undefined, undefined],
      ]);
      expect(viewsA[0]?.outcome).toEqual({ type: 'result', valueJson: '1' });
      expect(viewsA[0]?.source).toEqual(source);
      const flat = (all: Record<string, string>) => Object.entries(all).flat();
      expect(prevViews.callsOfPushed(flat(na))).toEqual(viewsA);
      expect(prevViews.callsOfPushed(end3Parse(na))).toEqual(viewsA);
      expect(prevViews.callsOfPushed(end3Parse(nb))).toEqual(viewsA);

      // e8feb7a0's scripts (and this release's) reading a stored entry: a claim's replay, a
      // markSent, an outcome again.
      for (const key of [a, b]) {
        expect(await PREV_MARK_SENT.run(r.a, [key], ['1', ''])).toBe('done');
        expect(await MARK_SENT.run(r.a, [key], ['0', ''])).toBe('done');
        expect(
          await PREV_COMPLETE.run(r.a, [key], groupArgs([['1', 'x', String(T)]], undefined, true)),
        ).toEqual([['kept', '2']]);
        expect(await COMPLETE.run(r.a, [key], groupArgs([['0', 'x', String(T)]]))).toEqual([['kept', '1']]);
        const h =
          layout === '2' ? (await r.a.hget(key, '#c0'))?.split(' ')[1] : JSON.parse(before['0'] as string).h;
        const replay = [
          layout,
          '0',
          1,
          'notes.read',
          h as string,
          'x',
          '',
          'op',
          T,
          '1',
          3600,
          'tk',
          '0',
          '',
        ];
        expect(await PREV_CLAIM.run(r.a, [key], replay)).toEqual([['done', o[0], '1']]);
        // This release's claim takes no ttl a call (round 46), and the run's record as its second key.
        const head = replay.filter((_, i) => i !== 10);
        expect(await CLAIM.run(r.a, [key, key.replace('journal:', 'run:')], head)).toEqual([
          `done 1 ${o[0]}`,
        ]);
      }
    });

  it("a time cjson would round or an outcome it would escape: e8feb7a0's bytes exactly", async () => {
    const run = `splice-cjson-${Date.now()}`;
    await claimed(r.a, run, '2');
    const [a, b] = await copied(r.a, run, `${run}-prev`);
    const calls: [string, string, string][] = [
      ['0', sealer.seal('1'), '1765062000123.456'],
      ['1', 'a"b\\c/d', String(T)],
      ['2', sealer.seal('2'), '123456789012345'],
    ];
    expect(await COMPLETE.run(r.a, [a], groupArgs(calls))).toEqual(
      await PREV_COMPLETE.run(r.a, [b], groupArgs(calls, undefined, true)),
    );
    const [na, nb] = [await r.a.hgetall(a), await r.a.hgetall(b)];
    for (const field of ['0', '1', '2']) expect(na[field]).toBe(nb[field]);
    expect(JSON.parse(na['0'] as string).t1).toBe(1765062000123.5);
    expect(JSON.parse(na['1'] as string).o).toBe('a"b\\c/d');
  });

  it('through the journal: a group of outcomes, an unknown call journaled, an unclaimed one failed', async () => {
    const run = `splice-group-${Date.now()}`;
    const journal = await claimed(r.a, run, '2');
    const later = createCallJournal({ redis: r.a, sealer, now: () => T + 9 });
    // The run re-executed: call 2 was sent by the first attempt and never answered.
    expect(
      await later.claim(run, 2, { index: 2, binding: 'notes.read', argsJson: '{"n":2}', source }),
    ).toEqual({
      kind: 'unknown',
    });
    const unknown = { type: 'error' as const, name: 'UnknownOutcome' as never, message: 'lost' };
    const scripts = async () =>
      Number((await r.b.info('commandstats')).match(/^cmdstat_evalsha:calls=(\d+)/m)?.[1] ?? 0);
    const before = await scripts();
    const done = await Promise.allSettled([
      later.complete(run, 0, { type: 'result', valueJson: '"zero"' }),
      later.complete(run, 2, unknown),
      later.complete(run, 5, { type: 'result', valueJson: '5' }),
      later.complete(run, 1, { type: 'result', valueJson: '1' }),
    ]);
    expect(done.map((d) => (d.status === 'fulfilled' ? d.value : String(d.reason)))).toEqual([
      { deliverySeq: 1, stored: true },
      { deliverySeq: 2, stored: true },
      expect.stringContaining('complete of unclaimed call'),
      { deliverySeq: 3, stored: true },
    ]);
    expect((await scripts()) - before).toBe(1); // the four in one outcome group (TurnBatch)
    const views = await journal.listCalls(run);
    expect(views.map((v) => [v.index, v.state, v.deliverySeq, v.settledAtMs, v.outcome])).toEqual([
      [0, 'done', 1, T + 9, { type: 'result', valueJson: '"zero"' }],
      [1, 'done', 3, T + 9, { type: 'result', valueJson: '1' }],
      [2, 'done', 2, T + 9, unknown],
    ]);
    expect(views.map((v) => [v.binding, v.attempt, v.startedAtMs, v.source])).toEqual([
      ['notes.read', 1, T - 50, source],
      ['notes.list', 1, T - 50, undefined],
      ['notes.read', 1, T - 50, source],
    ]);
    expect(prevViews.callsOf(await r.a.hgetall(`islet:journal:{${run}}`))).toEqual(views);
    expect((await journal.list(run)).map((e) => e.argsJson)).toEqual(['{"t":"ü/\\""}', '{}', '{"n":2}']);
    expect(
      await later.claim(run, 2, { index: 2, binding: 'notes.read', argsJson: '{"n":2}', source }),
    ).toEqual({
      kind: 'done',
      outcome: unknown,
      deliverySeq: 2,
    });
  });
});
