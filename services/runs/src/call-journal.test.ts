import { fieldsOf } from '@islet/core/lua-script';
import type { BindingOutcome } from '@islet/protocol';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal, JournalConflictError } from './call-journal.ts';
import { idempotencyKeyFor, operationIdFor } from './operation-id.ts';

const result = (value: unknown): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify(value) });
const call = (index: number, args: unknown = { n: index }, binding = 'notes.read_note') => ({
  index,
  binding,
  argsJson: JSON.stringify(args),
});

describe('call journal on real Redis', () => {
  const r = useSuiteRedis();
  const sealer = createTestSealer();
  let runSeq = 0;
  const newRun = () => `run-${Date.now()}-${runSeq++}`;

  it('claims a call once, journals its outcome and answers it as done on replay, never as new', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    const first = await journal.claim(run, 1, call(0));
    expect(first.kind).toBe('new');
    await journal.markSent(run, 0);
    expect(await journal.complete(run, 0, result({ title: 'x' }))).toEqual({ deliverySeq: 1, stored: true });
    const replay = await journal.claim(run, 2, call(0));
    expect(replay).toEqual({ kind: 'done', outcome: result({ title: 'x' }), deliverySeq: 1 });
    const [entry] = await journal.list(run);
    expect(entry).toMatchObject({
      index: 0,
      binding: 'notes.read_note',
      argsJson: '{"n":0}',
      state: 'done',
      outcome: result({ title: 'x' }),
      deliverySeq: 1,
      attempt: 1,
      operationId: operationIdFor(run, 0),
    });
    expect(entry?.settledAtMs).toBeGreaterThanOrEqual(entry?.startedAtMs ?? Number.POSITIVE_INFINITY);
  });

  it('journals a sendNow claim as sent in the same step: a crash before complete is unknown, never resent', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    expect((await journal.claim(run, 1, { ...call(0), sendNow: true })).kind).toBe('new');
    expect((await journal.get(run, 0))?.state).toBe('sent');
    // The handler died after sending (no complete): the same attempt's retry and a later attempt
    // both learn the outcome is unknown; nobody may send it again.
    expect(await journal.claim(run, 1, { ...call(0), takeover: true, sendNow: true })).toEqual({
      kind: 'unknown',
    });
    expect(await journal.claim(run, 2, { ...call(0), sendNow: true })).toEqual({ kind: 'unknown' });
    // Two gateways racing for one call with sendNow: exactly one gets `new`.
    const raced = newRun();
    const claims = await Promise.all([
      journal.claim(raced, 1, { ...call(0), sendNow: true }),
      createCallJournal({ redis: r.b, sealer }).claim(raced, 1, { ...call(0), sendNow: true }),
    ]);
    expect(claims.map((c) => c.kind).sort()).toEqual(['in-flight', 'new']);
    // A pending call of an earlier attempt that never left is re-offered, and marked sent with it.
    const pending = newRun();
    await journal.claim(pending, 1, call(0));
    expect((await journal.claim(pending, 2, { ...call(0), sendNow: true })).kind).toBe('new');
    expect((await journal.get(pending, 0))?.state).toBe('sent');
  });

  it("a live run's journal has no expiry, claimed without nextAttempt or started with it; one with no record, a minute's", async () => {
    // Round 46 (journal-life.test.ts): one retention from the last write was too short for a run
    // that waits longer; the run's end gives the journal the record's expiry.
    const journal = createCallJournal({ redis: r.a, sealer, ttlSeconds: 1000 });
    for (const live of [true, false]) {
      const bare = newRun();
      if (live) await r.a.hset(`islet:run:{${bare}}`, 'status', 'Running');
      await journal.claim(bare, 1, { ...call(0), sendNow: true });
      const ttl = await r.a.ttl(`islet:journal:{${bare}}`);
      if (live) expect(ttl).toBe(-1);
      else expect([ttl > 0, ttl <= 60]).toEqual([true, true]);
    }
    const started = newRun();
    expect(await journal.nextAttempt(started)).toBe(1);
    await journal.claim(started, 1, { ...call(0), sendNow: true });
    await journal.claim(started, 1, call(1));
    expect(await r.a.ttl(`islet:journal:{${started}}`)).toBe(-1);
  });

  it("appends complete's event with the outcome it stores, and never for an outcome it keeps", async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    const streamKey = `islet:run:{${run}}:events`;
    const sub = r.b.duplicate();
    const heard: string[] = [];
    await sub.subscribe('test:events');
    sub.on('message', (_c: string, m: string) => heard.push(m));
    try {
      const event = (text: string) => ({
        streamKey,
        maxLen: 100,
        type: 'call',
        sealedData: text,
        channel: 'test:events',
        message: `${run} call`,
      });
      await journal.claim(run, 1, { ...call(0), sendNow: true });
      expect(await journal.complete(run, 0, result(1), event('first'))).toEqual({
        deliverySeq: 1,
        stored: true,
      });
      expect(await journal.complete(run, 0, result(2), event('second'))).toEqual({
        deliverySeq: 1,
        stored: false,
      });
      const rows = await r.a.xrange(streamKey, '-', '+');
      expect(rows.map(([, f]) => f)).toEqual([['type', 'call', 'data', 'first']]);
      for (let i = 0; i < 50 && heard.length === 0; i++) await new Promise((w) => setTimeout(w, 20));
      expect(heard).toEqual([`${run} call`]);
      expect((await journal.get(run, 0))?.outcome).toEqual(result(1));
    } finally {
      sub.disconnect();
    }
  });

  it('answers mismatch when the binding or the arguments differ, and changes nothing', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    await journal.claim(run, 1, call(0, { to: 'team@example.com' }, 'mail.send_email'));
    await journal.complete(run, 0, result('sent'));
    expect(await journal.claim(run, 2, call(0, { to: 'all@example.com' }, 'mail.send_email'))).toEqual({
      kind: 'mismatch',
      expected: { binding: 'mail.send_email' },
    });
    expect(await journal.claim(run, 2, call(0, { to: 'team@example.com' }, 'mail.delete'))).toEqual({
      kind: 'mismatch',
      expected: { binding: 'mail.send_email' },
    });
    expect((await journal.get(run, 0))?.outcome).toEqual(result('sent'));
  });

  it('tells in-flight (same attempt) from unknown (sent by an earlier attempt) and re-offers unsent calls', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    expect((await journal.claim(run, 1, call(0))).kind).toBe('new');
    expect((await journal.claim(run, 1, call(1))).kind).toBe('new');
    await journal.markSent(run, 1);
    // A duplicate delivery within the same attempt.
    expect(await journal.claim(run, 1, call(0))).toEqual({ kind: 'in-flight' });
    expect(await journal.claim(run, 1, call(1))).toEqual({ kind: 'in-flight' });
    // A later attempt: call 0 never left (safe to send), call 1 did (outcome unknown).
    expect((await journal.claim(run, 2, call(0))).kind).toBe('new');
    expect(await journal.claim(run, 2, call(1))).toEqual({ kind: 'unknown' });
  });

  it('takes a same-attempt call over only when asked, and fences the old handler by token', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    const old = await journal.claim(run, 1, call(0));
    const retry = await journal.claim(run, 1, { ...call(0), takeover: true });
    expect(retry.kind).toBe('new');
    if (old.kind !== 'new' || retry.kind !== 'new') throw new Error('expected new claims');
    await expect(journal.markSent(run, 0, old.token)).rejects.toBeInstanceOf(JournalConflictError);
    await journal.markSent(run, 0, retry.token);
    expect(await journal.claim(run, 1, { ...call(0), takeover: true })).toEqual({ kind: 'unknown' });
  });

  it('fences a superseded attempt once a newer one has started', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    expect(await journal.nextAttempt(run)).toBe(1);
    expect((await journal.claim(run, 1, call(0))).kind).toBe('new');
    expect(await journal.nextAttempt(run)).toBe(2);
    expect(await journal.claim(run, 1, call(1))).toEqual({ kind: 'superseded' });
    expect((await journal.claim(run, 2, call(1))).kind).toBe('new');
  });

  it('begins an attempt in one script: the record, the attempt counted, the journal; none for a missing, ended or cancelled run', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    const runKey = `islet:run:{${run}}`;
    const missing = await journal.beginAttempt(run, runKey);
    expect(missing).toMatchObject({ attempt: undefined, entries: [] });
    expect(fieldsOf(missing.runFields)).toEqual({});
    expect(await r.a.exists(`islet:journal:{${run}}`)).toBe(0);
    await r.a.hset(runKey, { id: run, status: 'Running', attempts: '0' });
    const first = await journal.beginAttempt(run, runKey);
    expect(first).toMatchObject({ attempt: 1, entries: [] });
    // The record as read, before it was counted.
    expect(fieldsOf(first.runFields)).toMatchObject({ id: run, status: 'Running', attempts: '0' });
    expect(await r.a.hget(runKey, 'attempts')).toBe('1');
    // A first start writes no journal: the record's count fences it; the first call's claim
    // creates the journal, with no expiry while the run lives (its end sets one).
    expect(await r.a.exists(`islet:journal:{${run}}`)).toBe(0);
    expect((await journal.claim(run, 1, call(0))).kind).toBe('new');
    expect(await r.a.ttl(`islet:journal:{${run}}`)).toBe(-1);
    expect(await r.a.hget(`islet:journal:{${run}}`, '#attempt')).toBeNull();
    const second = await journal.beginAttempt(run, runKey);
    expect(second.attempt).toBe(2);
    expect(second.entries.map((e) => [e.index, e.attempt, e.state])).toEqual([[0, 1, 'pending']]);
    // The newer attempt fences the older one, as nextAttempt does.
    expect(await journal.claim(run, 1, call(1))).toEqual({ kind: 'superseded' });
    await r.a.hset(runKey, 'cancelRequested', '1');
    expect((await journal.beginAttempt(run, runKey)).attempt).toBeUndefined();
    await r.a.hset(runKey, { cancelRequested: '0', status: 'Completed' });
    const ended = await journal.beginAttempt(run, runKey);
    expect(ended).toMatchObject({ attempt: undefined, entries: [] });
    expect(fieldsOf(ended.runFields).status).toBe('Completed');
    expect(await r.a.hget(runKey, 'attempts')).toBe('2');
    expect(await r.a.hget(`islet:journal:{${run}}`, '#attempt')).toBe('2');
  });

  it('numbers a start past the record when the journal counts fewer (no `#attempt` after a first start): the earlier execution stays fenced', async () => {
    // The shape the next release's first starts leave (the journal's count unwritten, −2 commands a
    // run), read by this release's start: with a call journaled by the first attempt and without.
    const journal = createCallJournal({ redis: r.a, sealer });
    for (const firstCalled of [true, false]) {
      const run = newRun();
      const runKey = `islet:run:{${run}}`;
      const journalKey = `islet:journal:{${run}}`;
      await r.a.hset(runKey, { id: run, status: 'Running', attempts: '1' });
      if (firstCalled) expect((await journal.claim(run, 1, call(0))).kind).toBe('new');
      expect(await r.a.hget(journalKey, '#attempt')).toBeNull();
      const second = await journal.beginAttempt(run, runKey);
      expect(second.attempt).toBe(2);
      expect(second.entries.map((e) => [e.index, e.attempt, e.state])).toEqual(
        firstCalled ? [[0, 1, 'pending']] : [],
      );
      expect(await r.a.hget(journalKey, '#attempt')).toBe('2');
      expect(await r.a.hget(runKey, 'attempts')).toBe('2');
      expect(await r.a.ttl(journalKey)).toBe(-1);
      // The first attempt's execution, still alive, is told a newer one started.
      expect(await journal.claim(run, 1, call(1))).toEqual({ kind: 'superseded' });
      expect((await journal.claim(run, 2, call(1))).kind).toBe('new');
      expect((await journal.beginAttempt(run, runKey)).attempt).toBe(3);
    }
  });

  it('with the start event, a started attempt marks the record Running, appends its status event with the attempt, and publishes; a refused one writes nothing', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    const runKey = `islet:run:{${run}}`;
    const streamKey = `islet:run:{${run}}:events`;
    const start = {
      streamKey,
      maxLen: 100,
      type: 'status',
      sealedData: sealer.seal('{"status":"Running"}'),
      channel: `test-run-events-${run}`,
      message: `${run} running`,
    };
    const heard: string[] = [];
    const sub = r.a.duplicate();
    try {
      await sub.subscribe(start.channel);
      sub.on('message', (_c: string, m: string) => heard.push(m));
      await r.a.hset(runKey, { id: run, status: 'Waiting', updatedAt: '1' });
      expect((await journal.beginAttempt(run, runKey, start)).attempt).toBe(1);
      expect(await r.a.hget(runKey, 'status')).toBe('Running');
      expect(Number(await r.a.hget(runKey, 'updatedAt'))).toBeGreaterThan(1);
      const rows = await r.a.xrange(streamKey, '-', '+');
      expect(rows.map(([, f]) => f)).toEqual([['type', 'status', 'data', start.sealedData, 'attempt', '1']]);
      await expect.poll(() => heard).toEqual([`${run} running`]);
      await r.a.hset(runKey, 'status', 'Cancelled');
      expect((await journal.beginAttempt(run, runKey, start)).attempt).toBeUndefined();
      expect(await r.a.hget(runKey, 'status')).toBe('Cancelled');
      expect(await r.a.xlen(streamKey)).toBe(1);
    } finally {
      sub.disconnect();
    }
  });

  it('keeps the first outcome when a call is completed twice', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    await journal.claim(run, 1, call(0));
    expect(await journal.complete(run, 0, result('first'))).toEqual({ deliverySeq: 1, stored: true });
    expect(await journal.complete(run, 0, result('second'))).toEqual({ deliverySeq: 1, stored: false });
    expect((await journal.get(run, 0))?.outcome).toEqual(result('first'));
    await expect(journal.complete(run, 9, result('x'))).rejects.toThrow(/unclaimed/);
  });

  it('numbers deliveries in completion order, not index order', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    for (const i of [0, 1, 2]) await journal.claim(run, 1, call(i));
    await journal.complete(run, 2, result(2));
    await journal.complete(run, 0, result(0));
    await journal.complete(run, 1, result(1));
    const seqs = (await journal.list(run)).map((e) => [e.index, e.deliverySeq]);
    expect(seqs).toEqual([
      [0, 2],
      [1, 3],
      [2, 1],
    ]);
  });

  it("claims a run's calls made together in one script call, and journals outcomes finished together in one, each with its own answer", async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    const streamKey = `islet:run:{${run}}:events`;
    const scripts = () =>
      r.b
        .info('commandstats')
        .then(
          (t) =>
            Number(/cmdstat_evalsha:calls=(\d+)/.exec(t)?.[1] ?? 0) +
            Number(/cmdstat_eval:calls=(\d+)/.exec(t)?.[1] ?? 0),
        );
    const sub = r.b.duplicate();
    const heard: string[] = [];
    await sub.subscribe('test:group-events');
    sub.on('message', (_c: string, m: string) => heard.push(m));
    try {
      await journal.claim(run, 1, call(0));
      await journal.complete(run, 0, result('zero'));
      await journal.claim(run, 1, call(1, { other: true }));
      const before = await scripts();
      // One group: a done call, a mismatch, an in-flight one and 40 new ones, each answered as alone.
      const claims = await Promise.all([
        journal.claim(run, 2, call(0)),
        journal.claim(run, 2, call(1)),
        journal.claim(run, 1, call(1, { other: true })),
        ...Array.from({ length: 40 }, (_, i) => journal.claim(run, 2, { ...call(i + 2), sendNow: true })),
      ]);
      expect(await scripts()).toBe(before + 1);
      expect(claims.slice(0, 3)).toEqual([
        { kind: 'done', outcome: result('zero'), deliverySeq: 1 },
        { kind: 'mismatch', expected: { binding: 'notes.read_note' } },
        { kind: 'in-flight' },
      ]);
      expect(claims.slice(3).map((c) => c.kind)).toEqual(Array(40).fill('new'));
      const event = (i: number) => ({
        streamKey,
        maxLen: 100,
        type: 'call',
        sealedData: `event ${i}`,
        channel: 'test:group-events',
        message: `${run} call`,
      });
      // 40 outcomes and one already journaled (kept: no event), in one script call and one publish.
      const done = await Promise.all([
        ...Array.from({ length: 40 }, (_, i) => journal.complete(run, i + 2, result(i + 2), event(i + 2))),
        journal.complete(run, 0, result('again'), event(0)),
      ]);
      expect(await scripts()).toBe(before + 2);
      expect(done.map((d) => d.deliverySeq)).toEqual([...Array.from({ length: 40 }, (_, i) => i + 2), 1]);
      expect(done.map((d) => d.stored)).toEqual([...Array(40).fill(true), false]);
      const rows = await r.a.xrange(streamKey, '-', '+');
      expect(rows.map(([, f]) => f[3])).toEqual(Array.from({ length: 40 }, (_, i) => `event ${i + 2}`));
      for (let i = 0; i < 50 && heard.length === 0; i++) await new Promise((w) => setTimeout(w, 20));
      await new Promise((w) => setTimeout(w, 50));
      expect(heard).toEqual([`${run} call`]);
      expect((await journal.get(run, 0))?.outcome).toEqual(result('zero'));
      expect((await journal.get(run, 41))?.outcome).toEqual(result(41));
      // An unclaimed call in a group fails alone; the others are journaled.
      const mixed = await Promise.allSettled([
        journal.complete(run, 99, result('x')),
        journal.complete(run, 1, result('one')),
      ]);
      expect(mixed[0]).toMatchObject({
        status: 'rejected',
        reason: { message: expect.stringMatching(/unclaimed/) },
      });
      expect(mixed[1]).toEqual({ status: 'fulfilled', value: { deliverySeq: 42, stored: true } });
    } finally {
      sub.disconnect();
    }
  });

  it('claims and completes with one hash read and one hash write a script, whatever the group, and a call twice in a group sees its own first write', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    const stats = async () => {
      const t = await r.b.info('commandstats');
      return new Map([...t.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
    };
    const delta = async (body: () => Promise<unknown>) => {
      const before = await stats();
      await body();
      const after = await stats();
      const out: Record<string, number> = {};
      for (const [name, n] of after) {
        const d = n - (before.get(name) ?? 0);
        if (d > 0 && name !== 'info') out[name] = d;
      }
      return out;
    };
    // A live run's journal no later attempt started: the claim reads the record's expiry (none: the
    // journal gets none either, journal-life.test.ts).
    await r.a.hset(`islet:run:{${run}}`, 'status', 'Running');
    expect(await delta(() => journal.claim(run, 1, { ...call(0), sendNow: true }))).toEqual({
      evalsha: 1,
      hmget: 1,
      hset: 1,
      pttl: 1,
    });
    const event = {
      streamKey: `islet:run:{${run}}:events`,
      maxLen: 100,
      type: 'call',
      sealedData: 'event',
      channel: 'test:count-events',
      message: `${run} call`,
    };
    expect(await delta(() => journal.complete(run, 0, result(0), event))).toEqual({
      evalsha: 1,
      hmget: 1,
      hset: 1,
      xadd: 1,
      publish: 1,
    });
    const attempt = await journal.nextAttempt(run);
    // 20 calls together: still one read and one write each way.
    expect(
      await delta(() =>
        Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            journal.claim(run, attempt, { ...call(i + 1), sendNow: true }),
          ),
        ),
      ),
    ).toEqual({ evalsha: 1, hmget: 1, hset: 1 });
    expect(
      await delta(() =>
        Promise.all(Array.from({ length: 20 }, (_, i) => journal.complete(run, i + 1, result(i + 1)))),
      ),
    ).toEqual({ evalsha: 1, hmget: 1, hset: 1 });
    // The same call twice in one group, as two scripts one after another would see it.
    const twice = await Promise.all([
      journal.claim(run, attempt, { ...call(30), sendNow: true }),
      journal.claim(run, attempt, { ...call(30), sendNow: true }),
      journal.claim(run, attempt, call(31)),
      journal.claim(run, attempt, { ...call(31), takeover: true, sendNow: true }),
    ]);
    expect(twice.map((c) => c.kind)).toEqual(['new', 'in-flight', 'new', 'new']);
    expect((await journal.get(run, 31))?.state).toBe('sent');
    const done = await Promise.all([
      journal.complete(run, 30, result('first')),
      journal.complete(run, 30, result('second')),
      journal.complete(run, 31, result('other')),
    ]);
    expect(done).toEqual([
      { deliverySeq: 22, stored: true },
      { deliverySeq: 22, stored: false },
      { deliverySeq: 23, stored: true },
    ]);
    expect((await journal.get(run, 30))?.outcome).toEqual(result('first'));
    expect(await r.a.hget(`islet:journal:{${run}}`, '#seq')).toBe('23');
  });

  it('lets exactly one of two concurrently claiming clients (two gateways) send each call', async () => {
    const ja = createCallJournal({ redis: r.a, sealer });
    const jb = createCallJournal({ redis: r.b, sealer });
    const run = newRun();
    const indexes = Array.from({ length: 200 }, (_, i) => i);
    const claims = await Promise.all(
      indexes.flatMap((i) => [ja.claim(run, 1, call(i)), jb.claim(run, 1, call(i))]),
    );
    const kinds = claims.map((c) => c.kind);
    expect(kinds.filter((k) => k === 'new')).toHaveLength(200);
    expect(kinds.filter((k) => k === 'in-flight')).toHaveLength(200);
    for (const i of indexes) {
      const pair = [claims[2 * i]?.kind, claims[2 * i + 1]?.kind].sort();
      expect(pair).toEqual(['in-flight', 'new']);
    }
    // Concurrent completions get distinct, gap-free delivery numbers.
    const done = await Promise.all(indexes.map((i) => (i % 2 ? ja : jb).complete(run, i, result(i))));
    expect(done.map((d) => d.deliverySeq).sort((x, y) => x - y)).toEqual(indexes.map((i) => i + 1));
  });

  it('compares arguments through a keyed hash: every gateway must share the key', async () => {
    const run = newRun();
    const one = createCallJournal({ redis: r.a, sealer, argsHashKey: 'k'.repeat(32) });
    const same = createCallJournal({ redis: r.b, sealer, argsHashKey: 'k'.repeat(32) });
    const other = createCallJournal({ redis: r.b, sealer, argsHashKey: 'z'.repeat(32) });
    await one.claim(run, 1, call(0));
    await one.complete(run, 0, result('ok'));
    expect((await same.claim(run, 2, call(0))).kind).toBe('done');
    expect((await other.claim(run, 2, call(0))).kind).toBe('mismatch');
  });

  it("lists a run's calls for its record without opening their arguments", async () => {
    const opened: string[] = [];
    const counting = {
      seal: (text: string) => sealer.seal(text),
      open: (sealed: string) => {
        const text = sealer.open(sealed);
        opened.push(text);
        return text;
      },
    };
    const journal = createCallJournal({ redis: r.a, sealer: counting });
    const run = newRun();
    for (const i of [0, 1, 2]) await journal.claim(run, 1, call(i, { secret: `args-${i}` }));
    await journal.complete(run, 2, result('two'));
    await journal.complete(run, 0, result('zero'));
    opened.length = 0;
    const calls = await journal.listCalls(run);
    expect(opened).toEqual([JSON.stringify(result('zero')), JSON.stringify(result('two'))]);
    const full = await journal.list(run);
    expect(full.map((e) => e.argsJson)).toEqual(
      [0, 1, 2].map((i) => JSON.stringify({ secret: `args-${i}` })),
    );
    // The same entries, but for their arguments, in index order.
    expect(calls).toEqual(full.map(({ argsJson: _, ...view }) => view));
    expect(calls.map((c) => [c.index, c.state, c.deliverySeq])).toEqual([
      [0, 'done', 2],
      [1, 'pending', undefined],
      [2, 'done', 1],
    ]);
    for (const c of calls) expect(c).not.toHaveProperty('argsJson');
    // From a hash read elsewhere (a run's pushed end), the same.
    expect(journal.callsOf(await r.a.hgetall(`islet:journal:{${run}}`))).toEqual(calls);
  });

  it('seals arguments and outcomes at rest', async () => {
    const journal = createCallJournal({ redis: r.a, sealer, keyPrefix: 'sealcheck:' });
    const run = newRun();
    await journal.claim(run, 1, call(0, { secret: 'hunter2-args' }));
    await journal.complete(run, 0, result({ secret: 'hunter2-result' }));
    const raw = JSON.stringify(await r.a.hgetall(`sealcheck:journal:{${run}}`));
    expect(raw).not.toContain('hunter2');
    expect((await journal.get(run, 0))?.argsJson).toBe('{"secret":"hunter2-args"}');
  });

  it('waits for an in-flight call to be completed by its handler', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    await journal.claim(run, 1, call(0));
    setTimeout(() => void journal.complete(run, 0, result('late')), 100);
    expect(await journal.waitForOutcome(run, 0, { timeoutMs: 5000, pollMs: 20 })).toEqual({
      outcome: result('late'),
      deliverySeq: 1,
    });
    expect(await journal.waitForOutcome(run, 7, { timeoutMs: 60, pollMs: 20 })).toBeUndefined();
  });

  it('derives deterministic UUIDv5 operation ids and run:index idempotency keys', () => {
    const id = operationIdFor('8f1c', 1);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(operationIdFor('8f1c', 1)).toBe(id);
    expect(operationIdFor('8f1c', 2)).not.toBe(id);
    expect(idempotencyKeyFor('8f1c', 1)).toBe('8f1c:1');
  });

  it('keeps journaled outcomes across a Redis restart (AOF)', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = newRun();
    await journal.claim(run, 1, call(0));
    await journal.complete(run, 0, result('kept'));
    await new Promise((r) => setTimeout(r, 1200)); // appendfsync everysec
    await r.server.restart();
    const fresh = new Redis(r.server.url);
    try {
      const after = createCallJournal({ redis: fresh, sealer });
      expect(await after.claim(run, 2, call(0))).toEqual({
        kind: 'done',
        outcome: result('kept'),
        deliverySeq: 1,
      });
    } finally {
      fresh.disconnect();
    }
  });
});
