/**
 * A fused call baked with its names (baked-call.ts): the header makes each part the body reads as
 * the very table the unbaked call's split makes — for the fetch's fixed-length parts (KEYS, ARGV)
 * and the end's (BullMQ's, the end's with any number of fields at its end, the start's) — and the
 * call carries only what differs; a call's names select its text; another worker's names make
 * another; a call not of its parts' shape, or past MAX_BAKED texts, is not baked. Real redis-server
 * running the texts; the runner's calls with their writes are in the runner's baked-fetch.test.ts
 * and end-start-baked.test.ts.
 */

import { LuaScript } from '@islet/core/lua-script';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { BakedScript, type PartShape } from './baked-call.ts';
import { endDerived } from './end-derived.ts';
import { FETCHED_ARGS } from './fetched-start-args.ts';
import { FIXED_START } from './handoff-terms.ts';
import { endCompleteStartScript } from './lease-scripts.ts';

const r = useSuiteRedis();

type Arg = string | number;

const FETCH: PartShape[] = [
  { name: 'KEYS', keys: true, length: 11, names: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
  { name: 'ARGV', keys: false, length: 3 + FETCHED_ARGS + 1, names: [0, ...FIXED_START.map((i) => 3 + i)] },
];
/** The runner's end + completion + start's parts (end-complete-store.ts). */
const END_START: PartShape[] = [
  { name: 'BK', keys: true, length: 14, names: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13] },
  { name: 'BA', keys: false, length: 9, names: [2, 4, 6] },
  { name: 'EK', keys: true, length: 19, names: [14, 15, 16, 17] },
  { name: 'EA', keys: false, length: 23, names: [1, 2, 22], rest: true },
  { name: 'SA', keys: false, length: FETCHED_ARGS + 1, names: FIXED_START },
];

/** Names with bytes a literal must escape (a quote before a digit, a backslash, a NUL, a newline, UTF-8). */
const ODD = ["}:leases'1\\2", '}:deferred\u00001', 'v\u00e9\n7'];

/** A part's values: its names `<tag>:<name i>` (one of them odd), the others per call, numbers among them. */
function part(shape: PartShape, tag: string, call: string, length = shape.length): Arg[] {
  return Array.from({ length }, (_, i) =>
    shape.names.includes(i)
      ? `${tag}:n${i}${ODD[i % ODD.length]}`
      : i % 4 === 3
        ? 1_796_584_541_200 + i
        : `${call}:v${i}`,
  );
}

/** The body a probe text runs after its parts: each part's table, as Redis answers it. */
const answer = (names: string[]) => `return {${names.join(', ')}}`;

describe('a fused call baked with its names', () => {
  it('gives the fetch its very KEYS and ARGV, carrying no key and 10 arguments', async () => {
    const body = answer(['KEYS', 'ARGV']);
    const base = new LuaScript(body);
    const baker = new BakedScript(base, body, FETCH);
    const keys = part(FETCH[0] as PartShape, 'q', 'j1') as string[];
    const args = part(FETCH[1] as PartShape, 'q', 'j1');
    const baked = baker.call([keys, args]);
    expect(baked).toBeDefined();
    if (!baked) return;
    expect(baker.has(baked.script.sha)).toBe(true);
    expect(baker.has(base.sha)).toBe(false);
    // BullMQ's time and options; the start's 6 terms and its time; the delay. No name.
    expect(baked.keys).toEqual([]);
    expect(baked.args).toHaveLength(10);
    expect(baked.args.some((a) => typeof a === 'string' && a.includes(':n'))).toBe(false);
    const asSent = await base.run(r.a, keys, args);
    expect(await baked.script.run(r.a, baked.keys, baked.args as Arg[])).toEqual(asSent);
    expect(asSent).toEqual([keys, args.map(String)]);
  });

  it("gives the end's call the very parts its unbaked split makes, whatever the end's fields", async () => {
    const names = END_START.map((p) => p.name);
    // The unbaked script's own split (lease-scripts.ts `endCompleteSplit`), then the probe's body.
    const split = endCompleteStartScript('', 'x').source;
    const unbaked = new LuaScript(`${split.slice(0, split.indexOf('local deferMs'))}${answer(names)}`);
    const baker = new BakedScript(unbaked, answer(names), END_START);
    for (const fields of [0, 1, 7, 60]) {
      const values = END_START.map((p) => part(p, 'w', `r${fields}`, p.length + (p.rest ? fields : 0)));
      const baked = baker.call(values);
      expect(baked).toBeDefined();
      if (!baked) return;
      // BullMQ's job key; the end's run, tenant, time and decisions keys and its leases key;
      // BullMQ's 6, the end's 20 and its fields, the start's 7 and the delay.
      expect(baked.keys).toHaveLength(1 + 15);
      expect(baked.args).toHaveLength(6 + 20 + fields + 8);
      const [bk, ba, ek, ea, sa] = values as [string[], Arg[], string[], Arg[], Arg[]];
      const asSent = await unbaked.run(r.a, bk.concat(ek), ba.concat(ea, [14, 9], sa));
      expect(await baked.script.run(r.a, baked.keys, baked.args as Arg[])).toEqual(asSent);
      expect(asSent).toEqual(values.map((v) => v.map(String)));
    }
  });

  it("writes a Buffer name as its bytes (the end's packed options around their token), and an unsent position as false", async () => {
    const shape: PartShape[] = [
      { name: 'A1', keys: false, length: 3, names: [1], unsent: [2] },
      { name: 'BO', keys: false, length: 3, names: [1, 2] },
    ];
    const body = `return {A1[1], A1[2], tostring(A1[3]), BO[1], BO[2], BO[3]}`;
    const baker = new BakedScript(new LuaScript(body), body, shape);
    // Every byte value, a quote and a backslash before digits among them.
    const bytes = Buffer.from([...Array.from({ length: 256 }, (_, i) => i), 0x27, 0x31, 0x5c, 0x32]);
    const head = Buffer.from([0xde, 0x00, 0x0b, 0xa5, ...Buffer.from('token')]);
    const baked = baker.call([
      ['x1', bytes, 'sent'],
      ['t1', head, 'vm'],
    ]);
    expect(baked).toBeDefined();
    if (!baked) return;
    expect(baked.args).toEqual(['x1', 't1']);
    const got = (await r.a.callBuffer('EVAL', baked.script.source, 0, ...baked.args)) as Buffer[];
    expect(got.map((b) => b.toString('hex'))).toEqual(
      [Buffer.from('x1'), bytes, Buffer.from('false'), Buffer.from('t1'), head, Buffer.from('vm')].map((b) =>
        b.toString('hex'),
      ),
    );
    // The same Buffer again: the same text, found by identity; bytes equal in another Buffer: found by its text.
    expect(
      baker.call([
        ['x2', bytes, 'sent'],
        ['t2', head, 'vm'],
      ])?.script,
    ).toBe(baked.script);
    expect(
      baker.call([
        ['x3', Buffer.from(bytes), 'sent'],
        ['t3', head, 'vm'],
      ])?.script,
    ).toBe(baked.script);
  });

  it("bakes another worker's names in a text of its own, and finds one again by its names", () => {
    const body = answer(['KEYS', 'ARGV']);
    const baker = new BakedScript(new LuaScript(body), body, FETCH);
    const call = (tag: string, id: string) => [
      part(FETCH[0] as PartShape, tag, id),
      part(FETCH[1] as PartShape, tag, id),
    ];
    const first = baker.call(call('a', 'j1'))?.script;
    expect(first?.source).toContain("'a:n0}:leases\\0391\\0922'");
    // Another call of the same worker: the same text; its carried values its own.
    const again = baker.call(call('a', 'j2'));
    expect(again?.script).toBe(first);
    expect(again?.args).toContain('j2:v1');
    const other = baker.call(call('b', 'j1'))?.script;
    expect(other?.sha).not.toBe(first?.sha);
    expect(other?.source).toContain("'b:n0}:leases\\0391\\0922'");
    // Found again after another's (not the last one's).
    expect(baker.call(call('a', 'j3'))?.script).toBe(first);
    // A value carried that differs (a term, a sealed event) is no name: the same text.
    const terms = call('a', 'j4');
    (terms[1] as Arg[])[3 + 14] = 'v1.k2.x';
    expect(baker.call(terms)?.script).toBe(first);
  });

  it('sends a call not of its shape, or past 16 texts, unbaked', () => {
    const body = answer(['KEYS', 'ARGV']);
    const baker = new BakedScript(new LuaScript(body), body, FETCH);
    const keys = part(FETCH[0] as PartShape, 'c', 'j1');
    const args = part(FETCH[1] as PartShape, 'c', 'j1');
    expect(baker.call([keys.slice(1), args])).toBeUndefined();
    expect(baker.call([keys, args.slice(1)])).toBeUndefined();
    // A fixed-length part takes nothing more.
    expect(baker.call([keys, args.concat('x')])).toBeUndefined();
    expect(baker.call([keys])).toBeUndefined();
    // A name neither text, a number nor bytes (a Buffer's are written as they are: below).
    const odd = args.slice() as unknown[];
    odd[0] = true;
    expect(baker.call([keys, odd as Arg[]])).toBeUndefined();
    // Each counted by its reason (round 48: the runner's `islet_runner_end_unbaked_total`).
    expect(baker.unbaked).toEqual({ shape: 5, derived: 0, texts: 0 });
    for (let i = 0; i < 16; i++)
      expect(baker.call([part(FETCH[0] as PartShape, `v${i}`, 'j1'), args])).toBeDefined();
    expect(baker.call([part(FETCH[0] as PartShape, 'past', 'j1'), args])).toBeUndefined();
    expect(baker.call([part(FETCH[0] as PartShape, 'past2', 'j1'), args])).toBeUndefined();
    expect(baker.unbaked).toEqual({ shape: 5, derived: 0, texts: 2 });
    // One of the 16 still is.
    expect(baker.call([part(FETCH[0] as PartShape, 'v3', 'j1'), args])).toBeDefined();
    expect(baker.unbaked).toEqual({ shape: 5, derived: 0, texts: 2 });
    // A part of fewer values than its run's start is not of the shape.
    const end = new BakedScript(new LuaScript('return 1'), 'return 1', END_START);
    const values = END_START.map((p) => part(p, 'w', 'r'));
    expect(end.call(values)).toBeDefined();
    values[3] = (values[3] as Arg[]).slice(1);
    expect(end.call(values)).toBeUndefined();
  });

  it("makes derived entries in the text from what the call carries: the end's run and tenant keys, the ids' copies", async () => {
    const derived = endDerived('EA', ['BA', 0]);
    const shape: PartShape[] = END_START.map((p) =>
      p.name === 'BK'
        ? { ...p, derived: [{ at: 11, from: ['BA', 0], after: '' }] }
        : p.name === 'EK'
          ? { ...p, derived: derived.keys }
          : p.name === 'EA'
            ? { ...p, derived: derived.args }
            : p,
    );
    const names = shape.map((p) => p.name);
    const split = endCompleteStartScript('', 'x').source;
    const unbaked = new LuaScript(`${split.slice(0, split.indexOf('local deferMs'))}${answer(names)}`);
    const baker = new BakedScript(unbaked, answer(names), shape);
    // A run id and tenant with bytes a literal escapes; the keys' text before them odd too.
    const call = (run: string, tenant: string, prefix = "p'1\\2\u0000:", fields = 3) => {
      const values = shape.map((p) => part(p, 'w', run, p.length + (p.rest ? fields : 0)));
      const [bk, ba, ek, ea] = values as [Arg[], Arg[], Arg[], Arg[]];
      ba[0] = `${run}-r1`;
      bk[11] = `bull:q:${run}-r1`;
      ea[0] = run;
      ea[7] = run;
      ea[15] = tenant;
      ea[18] = `${run}-r1`;
      const made = (at: number, id: string) => {
        const d = [...derived.keys].find((x) => x.at === at);
        return `${prefix}${at}{${id}${d?.after}`;
      };
      for (const at of [0, 1, 2, 13]) ek[at] = made(at, run);
      for (const at of [3, 4, 5, 6, 7, 8, 10, 18]) ek[at] = made(at, tenant);
      return values;
    };
    const values = call('r\u00e9\n1', "t'1");
    const baked = baker.call(values);
    expect(baked).toBeDefined();
    if (!baked) return;
    // Carried: the end's 3 keys with a time part; the run id once, BullMQ's job id once.
    expect(baked.keys).toHaveLength(3);
    expect(baked.args).toHaveLength(6 + 18 + 3 + 8);
    expect(baked.args.filter((a) => a === 'r\u00e9\n1')).toHaveLength(1);
    expect(baked.args.filter((a) => a === 'r\u00e9\n1-r1')).toHaveLength(1);
    expect(baked.script.source).toContain("local EK = {'p\\0391\\0922\\000:0{' .. A[7] .. '}'");
    const [bk, ba, ek, ea, sa] = values as [string[], Arg[], string[], Arg[], Arg[]];
    const asSent = await unbaked.run(r.a, bk.concat(ek), ba.concat(ea, [14, 9], sa));
    expect(await baked.script.run(r.a, baked.keys, baked.args as Arg[])).toEqual(asSent);
    expect(asSent).toEqual(values.map((v) => v.map(String)));
    // Another run and tenant: the same text. Another prefix before them: another.
    const again = baker.call(call('r2', 'acme'));
    expect(again?.script).toBe(baked.script);
    const other = call('r3', 'beta', 'q:');
    const elsewhere = baker.call(other);
    expect(elsewhere?.script.sha).not.toBe(baked.script.sha);
    expect(await elsewhere?.script.run(r.a, elsewhere.keys, elsewhere.args as Arg[])).toEqual(
      other.map((v) => v.map(String)),
    );
    // Found again after another's: checked against that text's, not taken for it.
    expect(baker.call(call('r4', 'gamma'))?.script).toBe(baked.script);
  });

  it('sends a call whose derived entry is not its concatenation unbaked', () => {
    const shape: PartShape[] = [
      { name: 'K1', keys: true, length: 3, names: [0], derived: [{ at: 2, from: ['A2', 0], after: '}:x' }] },
      { name: 'A1', keys: false, length: 1, names: [], rest: true },
      // After the run: its source counted from the end.
      {
        name: 'A2',
        keys: false,
        length: 3,
        names: [2],
        derived: [{ at: 1, from: ['A2', 0], after: '', before: '' }],
      },
    ];
    const body = answer(['K1', 'A1', 'A2']);
    const baker = new BakedScript(new LuaScript(body), body, shape);
    const call = (key: Arg | Buffer, copy: Arg = 'id', id: Arg = 'id') => [
      ['n', 'k', key],
      ['a', 'b'],
      [id, copy, 'm'],
    ];
    const good = baker.call(call('pre{id}:x'));
    expect(good?.keys).toEqual(['k']);
    expect(good?.args).toEqual(['a', 'b', 'id']);
    expect(good?.script.source).toContain("local K1 = {'n', K[1], 'pre{' .. A[z] .. '}:x'}");
    expect(good?.script.source).toContain("local A2 = {A[z], A[z], 'm'}");
    for (const bad of [
      call('pre{ix}:x'),
      call('pre{id}:y'),
      call('{id}'),
      call('pre{id}:x', 'id2'),
      call('pre{id}:x', 'xid'),
      call(Buffer.from('pre{id}:x')),
      call('pre{7}:x', '7', 7),
    ])
      expect(baker.call(bad)).toBeUndefined();
    expect(baker.unbaked).toEqual({ shape: 0, derived: 7, texts: 0 });
    // A derived entry made from a name, from another derived, or where a name is: refused.
    const refused = (derived: PartShape['derived']) => () =>
      new BakedScript(new LuaScript(body), body, [
        { ...(shape[0] as PartShape), derived },
        ...shape.slice(1),
      ]);
    expect(refused([{ at: 2, from: ['K1', 0], after: '' }])).toThrow();
    expect(refused([{ at: 0, from: ['A2', 0], after: '' }])).toThrow();
    expect(refused([{ at: 2, from: ['A2', 1], after: '' }])).toThrow();
    expect(refused([{ at: 2, from: ['A1', 1], after: '' }])).toThrow();
  });
});
