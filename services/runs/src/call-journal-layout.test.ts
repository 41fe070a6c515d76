/**
 * The journal's two entry layouts (call-journal.ts, `writeFormat`): layout 1 writes every field in
 * `<index>` as the releases before e807b91 do; layout 2 (the default since the release after it) keeps the claim part (token,
 * argument hash, sealed arguments) at `#c<index>`, so the entry a run's answer reads, its pushed
 * end and every outcome's rewrite leave it out. Every reader reads both, in one journal too. Real
 * Redis; bytes and fields asserted, no times.
 */
import { generateSealKey, keys, sealerFromConfig } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import type { BindingOutcome } from '@islet/protocol';
import { runFixture } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { pushedEnd } from '../test/pushed-end.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createCallJournal, JournalConflictError } from './call-journal.ts';
import { createRunStore } from './run-store.ts';
import type { WriteFormat } from './run-store-types.ts';
import type { JournalCallView } from './types.ts';

const sealer = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
const source = { kind: 'app', app: 'notes', tool: 'read_note' } as never;
const result = (value: unknown): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify(value) });
const call = (index: number, args: unknown = { n: index }) => ({
  index,
  binding: 'notes.read_note',
  argsJson: JSON.stringify(args),
  source,
});
const journalKey = (run: string) => `islet:journal:{${run}}`;
/** A view without its clock stamps (two journals' claims are not made in the same ms). */
const timeless = (views: JournalCallView[]) =>
  views.map(({ startedAtMs: _s, settledAtMs: _t, ...rest }) => rest);

describe('the call journal’s layouts', () => {
  const r = useSuiteRedis();
  let runSeq = 0;
  const newRun = () => `lay-${Date.now()}-${runSeq++}`;
  const journalOf = (writeFormat?: WriteFormat, redis?: Redis) =>
    createCallJournal({ redis: redis ?? r.a, sealer, ...(writeFormat ? { writeFormat } : {}) });

  it('layout 1 ("1") writes every field in the entry, as the releases before e807b91 do', async () => {
    for (const journal of [journalOf('1')]) {
      const run = newRun();
      await journal.claim(run, 1, { ...call(0), sendNow: true });
      const claimed = await r.a.hgetall(journalKey(run));
      await journal.complete(run, 0, result('x'));
      const all = await r.a.hgetall(journalKey(run));
      expect(Object.keys(claimed)).toEqual(['0']);
      expect(Object.keys(all).sort()).toEqual(['#seq', '0']);
      // cjson's order of the table the previous release's claim-1.lua builds; complete-2 keeps it
      // and appends its fields (round 44 `outcome-script`; e8feb7a0 re-encoded the entry,
      // LAYOUT_1_KEYS: the same values, read alike, complete-splice.test.ts).
      expect(Object.keys(JSON.parse(claimed['0'] ?? '{}'))).toEqual(LAYOUT_1_CLAIMED_KEYS);
      expect(Object.keys(JSON.parse(all['0'] ?? '{}'))).toEqual([...LAYOUT_1_CLAIMED_KEYS, 'o', 'seq', 't1']);
      expect(Object.keys(JSON.parse(all['0'] ?? '{}')).sort()).toEqual([...LAYOUT_1_KEYS].sort());
    }
  });

  it('layout 2 (the default and "2") keeps the claim part apart; claim, markSent, complete, replay, get and list read it', async () => {
    const defaulted = journalOf();
    const first = newRun();
    await defaulted.claim(first, 1, call(0));
    expect(Object.keys(await r.a.hgetall(journalKey(first))).sort()).toEqual([
      '#c0',
      expect.stringMatching(/^#s:/),
      '0',
    ]);
    const journal = journalOf('2');
    const run = newRun();
    const claimed = await journal.claim(run, 1, call(0));
    if (claimed.kind !== 'new') throw new Error(`claimed ${claimed.kind}`);
    let all = await r.a.hgetall(journalKey(run));
    const entry = JSON.parse(all['0'] ?? '{}') as Record<string, unknown>;
    expect(Object.keys(entry).sort()).toEqual(['at', 'b', 'i', 'op', 's', 'st', 't0']);
    // The source once, named by the entry's `s`.
    expect(entry.s).toMatch(/^[\w-]{12}$/);
    expect(Object.keys(all).sort()).toEqual(['#c0', `#s:${entry.s}`, '0']);
    expect(all[`#s:${entry.s}`]).toBe(JSON.stringify(source));
    const [tk, h, a] = (all['#c0'] ?? '').split(' ');
    expect(tk).toBe(claimed.token);
    expect(h).toMatch(/^[\w-]{43}$/);
    expect(sealer.open(a ?? '')).toBe('{"n":0}');
    // The token is checked from the claim part.
    await expect(journal.markSent(run, 0, 'not-the-token')).rejects.toBeInstanceOf(JournalConflictError);
    await journal.markSent(run, 0, claimed.token);
    expect((await journal.get(run, 0))?.state).toBe('sent');
    // The hash is compared from it: same attempt in flight, other arguments a mismatch.
    expect(await journal.claim(run, 1, call(0))).toEqual({ kind: 'in-flight' });
    expect(await journal.claim(run, 2, call(0, { n: 9 }))).toEqual({
      kind: 'mismatch',
      expected: { binding: 'notes.read_note' },
    });
    const part = (await r.a.hget(journalKey(run), '#c0')) ?? '';
    expect(await journal.complete(run, 0, result({ title: 'x' }))).toEqual({ deliverySeq: 1, stored: true });
    all = await r.a.hgetall(journalKey(run));
    // The outcome's rewrite left the claim part as it was and the entry without it.
    expect(all['#c0']).toBe(part);
    expect(all['0']).not.toContain(part.split(' ')[2] ?? '?');
    expect(Object.keys(JSON.parse(all['0'] ?? '{}')).sort()).toEqual(
      ['at', 'b', 'i', 'o', 'op', 's', 'seq', 'st', 't0', 't1'].sort(),
    );
    // A replayed attempt is answered from the journal; its entries carry the arguments.
    expect(await journal.claim(run, 2, call(0))).toEqual({
      kind: 'done',
      outcome: result({ title: 'x' }),
      deliverySeq: 1,
    });
    expect((await journal.get(run, 0))?.argsJson).toBe('{"n":0}');
    const [listed] = await journal.list(run);
    expect(listed).toMatchObject({
      index: 0,
      argsJson: '{"n":0}',
      state: 'done',
      outcome: result({ title: 'x' }),
      source,
    });
    expect((await journal.get(run, 0))?.source).toEqual(source);
    expect((await journal.listCalls(run)).map((c) => c.index)).toEqual([0]);
    await createRunStore(r.a, sealer).create(runFixture(run, { tenant: 't1' }));
    // A first start returns no journal (no call precedes it): the second's is the replay's.
    await journal.beginAttempt(run, keys.run(run));
    const begun = await journal.beginAttempt(run, keys.run(run));
    expect(begun.entries.map((e) => [e.index, e.argsJson, e.deliverySeq])).toEqual([[0, '{"n":0}', 1]]);
  });

  it('layout 2 takes over a pending call with a new token in the claim part, the rest kept', async () => {
    const journal = journalOf('2');
    const run = newRun();
    const first = await journal.claim(run, 1, call(0));
    const before = (await r.a.hget(journalKey(run), '#c0')) ?? '';
    const second = await journal.claim(run, 2, { ...call(0), sendNow: true });
    if (first.kind !== 'new' || second.kind !== 'new') throw new Error('not claimed');
    const after = (await r.a.hget(journalKey(run), '#c0')) ?? '';
    expect(after).toBe(second.token + before.slice(before.indexOf(' ')));
    expect(JSON.parse((await r.a.hget(journalKey(run), '0')) ?? '{}')).toMatchObject({ st: 'sent', at: 2 });
    // The same attempt's takeover, and a group claiming one call twice, read what the group wrote.
    const third = newRun();
    await journal.claim(third, 1, call(0));
    const [x, y] = await Promise.all([
      journal.claim(third, 1, { ...call(0), takeover: true }),
      journal.claim(third, 1, { ...call(0), takeover: true }),
    ]);
    expect([x.kind, y.kind]).toEqual(['new', 'new']);
    const last = y.kind === 'new' ? y.token : '';
    expect(((await r.a.hget(journalKey(third), '#c0')) ?? '').startsWith(`${last} `)).toBe(true);
    await expect(journal.markSent(third, 0, x.kind === 'new' ? x.token : '')).rejects.toBeInstanceOf(
      JournalConflictError,
    );
    await journal.markSent(third, 0, last);
  });

  it('one journal holding both layouts: each entry keeps its own, both readers read both', async () => {
    const one = journalOf('1');
    const two = journalOf('2', r.b);
    const run = newRun();
    await one.claim(run, 1, call(0));
    await two.claim(run, 1, call(1));
    // Claimed again by the other writer (a new attempt re-offers a pending call): layouts kept.
    const again0 = await two.claim(run, 2, call(0));
    const again1 = await one.claim(run, 2, call(1));
    expect([again0.kind, again1.kind]).toEqual(['new', 'new']);
    const all = await r.a.hgetall(journalKey(run));
    expect(
      Object.keys(all)
        .filter((f) => !f.startsWith('#s:'))
        .sort(),
    ).toEqual(['#c1', '0', '1']);
    expect(JSON.parse(all['0'] ?? '{}').tk).toBe(again0.kind === 'new' ? again0.token : '?');
    expect((all['#c1'] ?? '').startsWith(`${again1.kind === 'new' ? again1.token : '?'} `)).toBe(true);
    expect(await one.claim(run, 3, call(1, 'other'))).toMatchObject({ kind: 'mismatch' });
    expect(await two.claim(run, 3, call(0, 'other'))).toMatchObject({ kind: 'mismatch' });
    await one.complete(run, 1, result(1));
    await two.complete(run, 0, result(0));
    for (const reader of [one, two]) {
      expect((await reader.list(run)).map((e) => [e.index, e.argsJson, e.state, e.source])).toEqual([
        [0, '{"n":0}', 'done', source],
        [1, '{"n":1}', 'done', source],
      ]);
      expect(await reader.claim(run, 3, call(1))).toEqual({
        kind: 'done',
        outcome: result(1),
        deliverySeq: 1,
      });
    }
  });

  it('a pushed end carries no claim part and a source once; its calls read as a read of layout 1 gives them', async () => {
    const views: Record<string, ReturnType<typeof timeless>> = {};
    const pushedBytes: Record<string, number> = {};
    for (const format of ['1', '2'] as const) {
      const runs = createRunStore(r.a, sealer, { writeFormat: format });
      const journal = journalOf(format);
      const id = newRun();
      await runs.create(runFixture(id, { tenant: 't1', pushEnd: true }));
      await journal.beginAttempt(id, keys.run(id));
      for (let i = 0; i < 20; i++) await journal.claim(id, 1, { ...call(i), sendNow: true });
      for (let i = 0; i < 20; i++) await journal.complete(id, i, result({ i }));
      const pushed = await pushedEnd(r.a, r.b, id, () =>
        runs.finish(runFixture(id, { tenant: 't1', pushEnd: true }), {
          status: 'Completed',
          result: { _tag: 'Completed', value: 1, logs: [] },
          text: 'ok',
        }),
      );
      const journalFields = fieldsOf(pushed[1]);
      expect(Object.keys(journalFields).some((f) => f.startsWith('#c'))).toBe(false);
      // Layout 2: the 20 calls' one source once.
      expect(Object.keys(journalFields).filter((f) => f.startsWith('#s:'))).toHaveLength(
        format === '2' ? 1 : 0,
      );
      for (const raw of Object.values(journalFields)) {
        if (raw.startsWith('{'))
          expect(Object.keys(JSON.parse(raw)).some((k) => ['a', 'h', 'tk'].includes(k))).toBe(format === '1');
      }
      views[format] = timeless(journal.callsOf(journalFields)).map((v) => ({ ...v, operationId: '' }));
      expect(timeless(await journal.listCalls(id)).map((v) => ({ ...v, operationId: '' }))).toEqual(
        views[format],
      );
      pushedBytes[format] = JSON.stringify(pushed[1]).length;
    }
    expect(views['2']).toEqual(views['1']);
    // 20 entries, each without its token (36), hash (43), sealed arguments and their JSON names, and
    // with a 12-character id for its source's text.
    expect((pushedBytes['1'] ?? 0) - (pushedBytes['2'] ?? 0)).toBeGreaterThan(20 * 150);
    console.log(`pushed journal of 20 calls: layout 1 ${pushedBytes['1']} B, layout 2 ${pushedBytes['2']} B`);
  });
});

/** cjson's key order of a layout-1 entry after its outcome (e8feb7a0's bytes; its keys here). */
const LAYOUT_1_KEYS = ['a', 's', 'b', 'st', 'tk', 'i', 'h', 't1', 'seq', 'at', 'op', 'o', 't0'];
/** … and as its claim writes it. */
const LAYOUT_1_CLAIMED_KEYS = ['a', 't0', 'b', 'st', 'tk', 'i', 'h', 's', 'at', 'op'];
