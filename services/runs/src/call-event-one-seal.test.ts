// A binding call's `call` event in its two stored forms (call-event-reads.ts): sealed data (what
// e8feb7a0 and 9ec25e04 write by default; ISLET_CALL_ONE_SEAL=false still writes it) and the
// one-seal form (ISLET_CALL_ONE_SEAL, the default since round 45: the call's index and duration,
// the data read from the run's journal). Both read alike through `readEvents`, in both journal
// layouts, mixed in one stream; the one-seal form seals one text a call fewer and stores no
// `data`; its data is its own run's journal's, and a forged journal text is refused as a forged
// event's was. The reader of the one-seal form fails on e8feb7a0 (it reads such an event as `{}`).
import { configSchema, generateSealKey, keys, type Redis, SealError, sealerFromConfig } from '@islet/core';
import type { BindingOutcome } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { onRedisServer } from '../test/test-redis.ts';
import { callEventData } from './call-event.ts';
import { createCallJournal } from './call-journal.ts';
import { journalKeys } from './keys.ts';
import { createRunStore } from './run-store.ts';
import type { CallSource, Sealer } from './types.ts';

const inner = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
let seals = 0;
const sealer: Sealer = {
  seal(text, bind) {
    seals++;
    return inner.seal(text, bind);
  },
  open: (text, bind) => inner.open(text, bind),
};

const source: CallSource = { connectionId: 'c1', connectionName: 'Echo "q"', name: 'say', kind: 'tool' };
const outcomes: BindingOutcome[] = [
  { type: 'result', valueJson: '{"echo":{"w":"é \\u2028"},"n":[1,2.5]}' },
  { type: 'result', valueJson: 'not json' },
  { type: 'error', name: 'AppCallFailed', message: 'no', details: { reason: 'http-status', status: 500 } },
  { type: 'error', name: 'AppCallDenied', message: 'denied' },
  { type: 'stop', code: 'cancelled', message: 'gone' },
];
const argsOf = (i: number) => (i === 1 ? 'not json either' : JSON.stringify({ w: `w${i}`, odd: '\u0001"' }));

let redis: Redis;
onRedisServer((client) => {
  redis = client;
});

/** Journals `outcomes` as calls of `runId`, each with its `call` event; the seals it took. */
async function calls(runId: string, opts: { oneSeal: boolean; format: '1' | '2'; from?: number }) {
  const journal = createCallJournal({ redis, sealer, writeFormat: opts.format });
  const store = createRunStore(redis, sealer, { callOneSeal: opts.oneSeal });
  const before = seals;
  for (let n = 0; n < outcomes.length; n++) {
    const index = (opts.from ?? 0) + n;
    const call = { index, binding: 'echo.say', argsJson: argsOf(index), source };
    const started = process.hrtime.bigint();
    expect((await journal.claim(runId, 1, { ...call, sendNow: true })).kind).toBe('new');
    const outcome = outcomes[n] as BindingOutcome;
    const event = store.callEvent(runId, () => callEventData(call, source, outcome, started), started);
    expect((await journal.complete(runId, index, outcome, event)).stored).toBe(true);
  }
  return { seals: seals - before, store };
}

const dataOf = async (runId: string) =>
  (await createRunStore(redis, sealer).readEvents(runId)).map((e) => ({ type: e.type, data: e.data }));
/** The data with its measured `durationMs` as its type (in its place: the key order is compared too). */
const timeless = (events: { type: string; data: Record<string, unknown> }[]) =>
  events.map((e) => ({ ...e, data: { ...e.data, durationMs: typeof e.data.durationMs } }));

describe('a call event, sealed and one-seal forms', () => {
  it('is written in its one-seal form unless ISLET_CALL_ONE_SEAL says false (the default since round 45: true)', () => {
    expect(configSchema.shape.ISLET_CALL_ONE_SEAL.parse(undefined)).toBe('true');
    expect(configSchema.shape.ISLET_CALL_ONE_SEAL.parse('false')).toBe('false');
    expect(() => configSchema.shape.ISLET_CALL_ONE_SEAL.parse('yes')).toThrow();
  });

  for (const format of ['1', '2'] as const) {
    it(`reads alike in journal layout ${format}, with one seal a call fewer and no data stored`, async () => {
      const sealed = await calls(`sealed-${format}`, { oneSeal: false, format });
      const one = await calls(`one-${format}`, { oneSeal: true, format });
      // Arguments, outcome and event sealed a call; the one-seal form leaves the event's out.
      expect(sealed.seals).toBe(3 * outcomes.length);
      expect(one.seals).toBe(2 * outcomes.length);
      const a = await dataOf(`sealed-${format}`);
      const b = await dataOf(`one-${format}`);
      expect(timeless(b)).toEqual(timeless(a));
      expect(JSON.stringify(timeless(b))).toBe(JSON.stringify(timeless(a)));
      expect(a).toHaveLength(outcomes.length);
      expect(a[0]?.data).toMatchObject({ index: 0, binding: 'echo.say', source, arguments: { w: 'w0' } });
      // Stored: `type`, `i`, `ms` and no `data` (one-seal); `type`, `data` (sealed).
      const [[, oneFields]] = (await redis.xrange(keys.runEvents(`one-${format}`), '-', '+', 'COUNT', 1)) as [
        [string, string[]],
      ];
      expect(oneFields).toEqual(['type', 'call', 'i', '0', 'ms', String(b[0]?.data.durationMs)]);
      const [[, sealedFields]] = (await redis.xrange(
        keys.runEvents(`sealed-${format}`),
        '-',
        '+',
        'COUNT',
        1,
      )) as [[string, string[]]];
      expect(sealedFields.slice(0, 3)).toEqual(['type', 'call', 'data']);
      // A reader that does not ask for it gets the same from the run store that wrote it.
      expect((await one.store.readEvents(`one-${format}`)).map((e) => e.data)).toEqual(b.map((e) => e.data));
    });
  }

  it('reads both forms in one stream in order (a rolling change of the setting), and pages alike', async () => {
    await calls('mixed', { oneSeal: false, format: '2' });
    await calls('mixed', { oneSeal: true, format: '2', from: outcomes.length });
    const all = await dataOf('mixed');
    expect(all.map((e) => e.data.index)).toEqual(Array.from({ length: 2 * outcomes.length }, (_, i) => i));
    expect(all.slice(outcomes.length).map((e) => [e.data.outcome, e.data.source])).toEqual(
      all.slice(0, outcomes.length).map((e) => [e.data.outcome, e.data.source]),
    );
    const store = createRunStore(redis, sealer);
    const first = await store.readEvents('mixed', '0', 3);
    const rest = await store.readEvents('mixed', first[2]?.id, 500);
    expect([...first, ...rest].map((e) => e.data)).toEqual(all.map((e) => e.data));
  });

  it("takes its data from its own run's journal only, and refuses a forged journal text", async () => {
    await calls('own', { oneSeal: true, format: '2' });
    // A one-seal event naming a call its run never made (another run's index): its index and time only.
    await redis.xadd(keys.runEvents('other'), '*', 'type', 'call', 'i', '2', 'ms', '7');
    expect((await dataOf('other')).map((e) => e.data)).toEqual([{ index: 2, durationMs: 7 }]);
    // One naming another journal field (a claim part, a source, a counter): not read as a call's.
    for (const field of ['#c0', '#seq', '01', ' 0'])
      await redis.xadd(keys.runEvents('own'), '*', 'type', 'call', 'i', field, 'ms', '1');
    expect((await dataOf('own')).slice(-4).map((e) => e.data)).toEqual([{}, {}, {}, {}]);
    // The journal gone (the reader's fallback: an end written by a release before round 45, which left
    // the journal its earlier expiry; a run outliving retention after its last call; a page read in
    // the millisecond both expire — journal-expiry-at-end.test.ts): the same.
    await calls('gone', { oneSeal: true, format: '1' });
    await redis.del(journalKeys().journal('gone'));
    expect(Object.keys((await dataOf('gone'))[0]?.data ?? {})).toEqual(['index', 'durationMs']);
    // The outcome text swapped for one sealed under no key of ours, or cut: refused, not read.
    const key = journalKeys().journal('own');
    const entry = JSON.parse((await redis.hget(key, '0')) as string) as { o: string };
    const other = sealerFromConfig({ ISLET_SEAL_KEYS: generateSealKey('k1') });
    await redis.hset(
      key,
      '0',
      JSON.stringify({ ...entry, o: other.seal('{"type":"result","valueJson":"1"}') }),
    );
    await expect(dataOf('own')).rejects.toBeInstanceOf(SealError);
    await redis.hset(key, '0', JSON.stringify({ ...entry, o: entry.o.slice(0, -4) }));
    await expect(dataOf('own')).rejects.toBeInstanceOf(SealError);
  });
});
