/**
 * The claim script writes a new layout-2 entry as text (lua/claim-1.lua, round 45 `claim-text`),
 * each string escaped by `cjson.encode` of that string, each number its argument's text when cjson
 * would write that text, in cjson's key order: the bytes 9ec25e04 (the previous release) writes
 * with `cjson.encode` of a table. Real redis-server. From the same arguments this release's script
 * and 9ec25e04's own (its text by `git show 9ec25e04:…`) write the same bytes in every field —
 * tenants' strings attacked with quotes, backslashes, `/` and `\/`, every control character, DEL,
 * U+2028/2029, bytes that are not UTF-8 and a 1 MiB value; numbers cjson would write otherwise
 * (15 digits, a fraction, a leading zero) take cjson's path — and 9ec25e04's readers (its
 * journal-views.ts, its claim and outcome scripts) read them as their own.
 */
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { previousJournalViews, previousScript } from '../test/previous-runs.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';
import { CLAIM } from './journal-scripts.ts';

const PREVIOUS = '9ec25e04';
const PREV_CLAIM = previousScript(PREVIOUS, 'lua/claim-1.lua', { CLAIM_FIELDS: '13' });
const PREV_COMPLETE = previousScript(PREVIOUS, 'lua/complete-2.lua', { COMPLETE_FIELDS: '6' });

let prevViews: Awaited<ReturnType<typeof previousJournalViews>>;
const sealer = createTestSealer();
const T = '1765062000123';
type Arg = string | number | Buffer;

const controls = String.fromCharCode(...Array.from({ length: 32 }, (_, c) => c), 0x7f);
/** Strings a tenant controls (a binding's, a source's names) and what cjson escapes or keeps. */
const ATTACKS: (string | Buffer)[] = [
  'notes.read',
  '',
  'say "hi"',
  'back\\slash\\',
  'a/b\\/c//',
  controls,
  `x${controls}y`,
  '\u2028\u2029',
  'ü€😀',
  '\ud800 lone',
  '</script><!--',
  '\\u0022\\"',
  Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0x22, 0x5c, 0x2f, 0x00, 0xe2, 0x80]),
  `${'x'.repeat(1 << 20)}"`,
];

/**
 * One call's 13 arguments as 9ec25e04's claim-1.lua takes them, the tenant's strings where they land
 * in the entry; this release's 12 are the same less the 10th, the journal's ttl (`headArgs`).
 */
function call(
  field: string,
  o: {
    binding?: Arg;
    op?: Arg;
    source?: Arg;
    sourceId?: Arg;
    attempt?: string;
    t0?: string;
    send?: boolean;
  } = {},
): Arg[] {
  return [
    field,
    o.attempt ?? '1',
    o.binding ?? 'notes.read',
    'hmac',
    'sealed.args',
    o.source ?? '',
    o.op ?? '0b1c2d3e-4f50-5617-8a9b-0c1d2e3f4a5b',
    o.t0 ?? T,
    '0',
    3600,
    'tk',
    o.send === false ? '0' : '1',
    o.sourceId ?? '',
  ];
}

/** A group's arguments (the layout, then 13 a call) as this release's script takes them: no ttl a call. */
function headArgs(args: (string | number)[]): (string | number)[] {
  return args.filter((_, i) => i === 0 || (i - 1) % 13 !== 9);
}

/** Both scripts over the same arguments in `layout`, each into a journal of its own: the replies and every field's bytes. */
async function bothWrite(redis: Redis, name: string, layout: '1' | '2', calls: Arg[][]) {
  const [a, b] = [`islet:journal:{${name}-head}`, `islet:journal:{${name}-prev}`];
  const args = ([layout] as Arg[]).concat(...calls) as (string | number)[];
  const head = await CLAIM.run(redis, [a, `islet:run:{${name}-head}`], headArgs(args));
  // 9ec25e04's replies are a table a call; this release's one string a call (claim-1.lua's header).
  const prev = ((await PREV_CLAIM.run(redis, [b], args)) as string[][]).map((r) =>
    r[0] === 'done' ? `done ${r[2]} ${r[1]}` : r.join(' '),
  );
  return { head, prev, a, b, ha: await redis.hgetallBuffer(a), hb: await redis.hgetallBuffer(b) };
}

describe("the claim script writes a new entry as text, 9ec25e04's bytes exactly", () => {
  const r = useSuiteRedis();
  beforeAll(async () => {
    prevViews = await previousJournalViews(PREVIOUS, sealer);
  });

  for (const layout of ['2', '1'] as const)
    it(`layout ${layout}: tenants' strings in every place of an entry, the same bytes as 9ec25e04's cjson`, async () => {
      const calls: Arg[][] = [];
      let f = 0;
      for (const s of ATTACKS) {
        calls.push(call(String(f++), { binding: s }));
        calls.push(call(String(f++), { op: s, send: false }));
        // A source's text where it has no id (the entry's `s` the text) and an id itself.
        calls.push(call(String(f++), { source: s }));
        calls.push(call(String(f++), { source: '{"name":"n"}', sourceId: s }));
      }
      const got = await bothWrite(r.a, `attack-${layout}`, layout, calls);
      expect(got.head).toEqual(calls.map(() => 'new'));
      expect(got.head).toEqual(got.prev);
      expect(Object.keys(got.ha).sort()).toEqual(Object.keys(got.hb).sort());
      // Compared as bytes (`equals`: a deep equal of a 1 MiB Buffer walks it an element at a time).
      expect(Object.keys(got.hb).filter((f) => !got.ha[f]?.equals(got.hb[f] as Buffer))).toEqual([]);
      // The values a parser reads back: what was sent (ioredis writes a lone surrogate as U+FFFD).
      const entry = JSON.parse((got.ha['0'] as Buffer).toString()) as Record<string, unknown>;
      expect(entry).toMatchObject({ i: 0, b: 'notes.read', st: 'sent', at: 1, t0: Number(T) });
      for (let k = 0; k < ATTACKS.length; k++) {
        const s = ATTACKS[k] as string | Buffer;
        if (Buffer.isBuffer(s)) continue;
        const e = (n: number) => JSON.parse((got.ha[String(4 * k + n)] as Buffer).toString());
        const sent = Buffer.from(s).toString();
        expect(e(0).b).toBe(sent);
        expect(e(1).op).toBe(sent);
        if (sent !== '') expect(e(2).s).toBe(sent);
      }
    });

  it('numbers cjson writes in another form take its path; the others are the text, not cjson', async () => {
    // Numbers as the gateway sends them (index 0, a 14-digit time) and as cjson would not keep them.
    const calls = [
      call('0'),
      call('12345678901234', { attempt: '0', t0: '99999999999999' }),
      call('123456789012345'),
      call('1', { t0: '1765062000123.25' }),
      call('2', { attempt: '01' }),
      call('3', { t0: '017' }),
      call('4', { t0: '1e3' }),
      call('5', { t0: '-1' }),
      call('6', { attempt: '2', t0: '' }),
    ];
    const got = await bothWrite(r.a, 'numbers', '2', calls);
    expect(got.head).toEqual(got.prev);
    for (const [field, bytes] of Object.entries(got.hb))
      expect(got.ha[field]?.toString()).toBe(bytes.toString());
    expect(got.ha['123456789012345']?.toString()).toMatch(/"i":1\.23456789012[0-9]*e\+14,/);
    expect(got.ha['3']?.toString()).toContain('"t0":17,');

    // Which path wrote: with cjson's number precision lowered on this test's own server (a setting
    // the product never changes, restored after), cjson writes the time as `1.77e+12`; the text
    // path writes the argument's digits.
    await r.a.eval('cjson.encode_number_precision(3)', 0);
    try {
      const low = await bothWrite(r.a, 'path', '2', [
        call('0', { sourceId: 'src-id' }),
        call('1', { t0: '1.5' }),
      ]);
      expect(low.ha['0']?.toString()).toBe(
        `{"i":0,"op":"0b1c2d3e-4f50-5617-8a9b-0c1d2e3f4a5b","t0":${T},"b":"notes.read","s":"src-id","st":"sent","at":1}`,
      );
      expect(low.hb['0']?.toString()).toContain('"t0":1.77e+12,');
      expect(low.ha['1']?.toString()).toBe(low.hb['1']?.toString());
      // Layout 1 is left to cjson.
      const one = await bothWrite(r.a, 'path-1', '1', [call('0')]);
      expect(one.ha['0']?.toString()).toContain('"t0":1.77e+12,');
    } finally {
      await r.a.eval('cjson.encode_number_precision(14)', 0);
    }
  });

  it("through the journal: 9ec25e04's readers and scripts read the entries as their own", async () => {
    const run = `claim-text-${Date.now()}`;
    const journal = createCallJournal({ redis: r.a, sealer, now: () => Number(T) });
    const binding = `say "hi"/\\${controls}\u2028ü`;
    const source = {
      connectionId: 'c/"1"',
      connectionName: 'n\\',
      name: `t\n${binding}`,
      kind: 'tool' as const,
    };
    const claims = await Promise.all([
      journal.claim(run, 1, { index: 0, binding, argsJson: '{"a":"/"}', source, sendNow: true }),
      journal.claim(run, 1, { index: 1, binding: 'notes.list', argsJson: '{}' }),
    ]);
    expect(claims.map((c) => c.kind)).toEqual(['new', 'new']);
    const key = `islet:journal:{${run}}`;
    const views = await journal.listCalls(run);
    expect(views.map((v) => [v.index, v.binding, v.state, v.attempt, v.startedAtMs, v.source])).toEqual([
      [0, binding, 'sent', 1, Number(T), source],
      [1, 'notes.list', 'pending', 1, Number(T), undefined],
    ]);
    expect(prevViews.callsOf(await r.a.hgetall(key))).toEqual(views);
    expect(prevViews.entriesOf(await r.a.hgetall(key))).toEqual(await journal.list(run));
    // 9ec25e04's scripts over the entry: its outcome spliced in, its claim's replay and mismatch.
    const o = sealer.seal('{"type":"result","valueJson":"1"}');
    expect(await PREV_COMPLETE.run(r.a, [key], [3600, '0', o, T, '', '', ''])).toEqual([['stored', '1']]);
    const h = (await r.a.hget(key, '#c0'))?.split(' ')[1] as string;
    const again = (b: string) => ['2', '0', 1, b, h, 'x', '', 'op', T, '1', 3600, 'tk', '0', ''];
    expect(await PREV_CLAIM.run(r.a, [key], again(binding))).toEqual([['done', o, '1']]);
    expect(await PREV_CLAIM.run(r.a, [key], again('other'))).toEqual([['mismatch', binding]]);
    const record = `islet:run:{${run}}`;
    expect(await CLAIM.run(r.a, [key, record], headArgs(again(binding)))).toEqual([`done 1 ${o}`]);
    expect(await CLAIM.run(r.a, [key, record], headArgs(again('other')))).toEqual([`mismatch ${binding}`]);
    expect(await journal.claim(run, 1, { index: 0, binding: 'other', argsJson: '{"a":"/"}' })).toEqual({
      kind: 'mismatch',
      expected: { binding },
    });
    expect((await journal.listCalls(run))[0]).toMatchObject({
      binding,
      state: 'done',
      deliverySeq: 1,
      source,
    });
  });
});
