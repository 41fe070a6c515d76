/**
 * The fused scripts baked with a worker's names (baked-call.ts): the header makes the very KEYS
 * and ARGV the unbaked call gives the script, so the rest of the text reads the same, for both
 * shapes — the fused fetch's (fixed length) and the run's end with its completion and the next
 * start (any number of the end's keys and arguments between BullMQ's and the start's); the call
 * carries only what differs; a variant is found by its start's fixed terms and BullMQ's names;
 * another worker's names get their own; a call not of the shape, or past MAX_BAKED texts, is not
 * baked. Real redis-server running the scripts; the runner's calls with their writes are in the
 * runner's baked-fetch.test.ts and end-start-baked.test.ts.
 */

import { LuaScript } from '@islet/core/lua-script';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { BakedScript, type BakeShape } from './baked-call.ts';
import { FETCHED_ARGS, type FixedStart } from './fetched-start-args.ts';

const r = useSuiteRedis();

/** What a fused script's text sees: its KEYS, its ARGV once the delay is taken off, the delay. */
const probe = () =>
  new LuaScript(`local deferMs = tonumber(table.remove(ARGV))
return {KEYS, ARGV, deferMs, #ARGV, #KEYS}`);

const FETCH: BakeShape = {
  keys: 11,
  names: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  args: 3,
  prefix: 0,
  middle: false,
};
const END_START: BakeShape = {
  keys: 14,
  names: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13],
  args: 9,
  prefix: undefined,
  middle: true,
};

/** The start's fixed arguments (all but the time): names with bytes a literal must escape, numbers. */
function fixedStart(pool = 'read-only', share = 0.25, sealed = 'v1.dev1.sealed\u00e9\n7'): FixedStart {
  const args: (string | number)[] = [
    `{pool:${pool}}:slots`,
    `{pool:${pool}}:busy`,
    `{pool:${pool}}:queued`,
    `{pool:${pool}}:waiting`,
    `{pool:${pool}}:t:{`,
    "}:leases'1\\2",
    `{pool:${pool}}:t:{`,
    '}:deferred\u00001',
    'islet:journal:{',
    '}',
    'islet:run:{',
    '}',
    'islet:run:{',
    '}:events',
    share,
    3,
    31_000,
    604_800,
    2000,
    'status',
    sealed,
    'islet:run-progress',
    ' running',
  ];
  expect(args).toHaveLength(FETCHED_ARGS - 1);
  return { args };
}

/** BullMQ's part of a call of `shape` under `prefix` (its names the prefix's, the others per call). */
function bull(shape: BakeShape, prefix: string, id: string) {
  const keys = Array.from({ length: shape.keys }, (_, i) =>
    shape.names.includes(i) ? `${prefix}k${i}` : `${prefix}${id}:k${i}`,
  );
  const args: (string | number | Buffer)[] = Array.from({ length: shape.args }, (_, i) =>
    i === shape.prefix ? prefix : i === 1 ? 1_796_584_541_200 : `${id}:a${i}`,
  );
  args[shape.args - 1] = Buffer.from([0x82, 0xa1, 0x00, 0xff]);
  return { keys, args };
}

/** The unbaked call's keys and arguments. */
function unbaked(
  b: ReturnType<typeof bull>,
  moreKeys: string[],
  moreArgs: (string | number)[],
  fixed: FixedStart,
  nowMs: number,
) {
  return {
    keys: b.keys.concat(moreKeys),
    args: (b.args as (string | number)[]).concat(moreArgs, fixed.args as (string | number)[], nowMs, 25),
  };
}

describe('a fused call baked with its names', () => {
  it('gives the fetch its very KEYS and ARGV, carrying no key and 10 arguments', async () => {
    const base = probe();
    const baker = new BakedScript(base, FETCH);
    const fixed = fixedStart();
    const b = bull(FETCH, 'islet:{runs-read-only}:', 'j1');
    const baked = baker.call(b.keys, b.args, [], [], { fixed, nowMs: 1_796_584_541_215 }, 25);
    expect(baked).toBeDefined();
    if (!baked) return;
    expect(baker.has(baked.script.sha)).toBe(true);
    expect(baker.has(base.sha)).toBe(false);
    // BullMQ's time and options; share, cap, lease ms, ttl, stream length, sealed event, the
    // start's time; the delay. No name.
    expect(baked.keys).toEqual([]);
    expect(baked.args).toHaveLength(10);
    expect(baked.args.some((a) => typeof a === 'string' && a.includes('{pool:'))).toBe(false);
    const sent = unbaked(b, [], [], fixed, 1_796_584_541_215);
    const asSent = await base.run(r.a, sent.keys, sent.args);
    const asBaked = await baked.script.run(r.a, baked.keys, baked.args as (string | number)[]);
    expect(asBaked).toEqual(asSent);
    expect((asSent as unknown[])[3]).toBe(3 + FETCHED_ARGS);
  });

  it("gives the end's call its very KEYS and ARGV whatever the end's length, carrying the end's", async () => {
    const base = probe();
    const baker = new BakedScript(base, END_START);
    const fixed = fixedStart();
    for (const n of [0, 1, 7, 60]) {
      const b = bull(END_START, 'islet:{runs-read-only}:', `j${n}`);
      const endKeys = Array.from({ length: Math.min(n, 18) }, (_, i) => `islet:run:{r${n}}:e${i}`);
      const endArgs: (string | number)[] = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? i : `v${i}`));
      const baked = baker.call(b.keys, b.args, endKeys, endArgs, { fixed, nowMs: 1_796_584_541_300 + n }, 25);
      expect(baked).toBeDefined();
      if (!baked) return;
      // The target's set, the job's key and the metrics key, then the end's; BullMQ's 9, the end's,
      // the start's 6 terms and its time, the delay.
      expect(baked.keys).toEqual([b.keys[10], b.keys[11], b.keys[12]].concat(endKeys));
      expect(baked.args).toHaveLength(9 + n + 8);
      const sent = unbaked(b, endKeys, endArgs, fixed, 1_796_584_541_300 + n);
      const asSent = (await base.run(r.a, sent.keys, sent.args)) as unknown[];
      const asBaked = await baked.script.run(r.a, baked.keys, baked.args as (string | number)[]);
      expect(asBaked).toEqual(asSent);
      expect(asSent[3]).toBe(9 + n + FETCHED_ARGS);
      expect(asSent[4]).toBe(14 + endKeys.length);
    }
  });

  it("bakes another worker's names in a variant of its own, and finds one again by its fixed start", () => {
    const base = probe();
    const baker = new BakedScript(base, FETCH);
    const fixed = fixedStart();
    const a = bull(FETCH, 'islet:{runs-a}:', 'j1');
    const b = bull(FETCH, 'islet:{runs-b}:', 'j1');
    const first = baker.call(a.keys, a.args, [], [], { fixed, nowMs: 1 }, 25)?.script;
    const other = baker.call(b.keys, b.args, [], [], { fixed, nowMs: 2 }, 25)?.script;
    expect(other?.sha).not.toBe(first?.sha);
    expect(other?.source).toContain("'islet:{runs-b}:k0'");
    expect(baker.call(a.keys, a.args, [], [], { fixed, nowMs: 3 }, 25)?.script).toBe(first);
    // Another pool's start is another text; the same names in another `FixedStart` the same text.
    const pool = baker.call(a.keys, a.args, [], [], { fixed: fixedStart('other'), nowMs: 4 }, 25)?.script;
    expect(pool?.sha).not.toBe(first?.sha);
    expect(pool?.source).toContain("'{pool:other}:slots'");
    expect(baker.call(a.keys, a.args, [], [], { fixed: fixedStart(), nowMs: 5 }, 25)?.script).toBe(first);
    // Other terms (another config's share, another seal key's event) are carried: the same text.
    const terms = baker.call(
      a.keys,
      a.args,
      [],
      [],
      { fixed: fixedStart('read-only', 0.5, 'v1.k2.x'), nowMs: 6 },
      25,
    );
    expect(terms?.script).toBe(first);
    expect(terms?.args).toContain('v1.k2.x');
  });

  it('sends a call not of its shape, or past 16 texts, unbaked', () => {
    const baker = new BakedScript(probe(), FETCH);
    const fixed = fixedStart();
    const { keys, args } = bull(FETCH, 'islet:{runs-c}:', 'j1');
    const start = { fixed, nowMs: 1 };
    expect(baker.call(keys.slice(1), args, [], [], start, 25)).toBeUndefined();
    expect(baker.call(keys, args.slice(1), [], [], start, 25)).toBeUndefined();
    // A fixed-length shape takes nothing between BullMQ's arguments and the start's.
    expect(baker.call(keys, args, [], ['x'], start, 25)).toBeUndefined();
    const numbered = args.slice();
    numbered[0] = 7;
    expect(baker.call(keys, numbered, [], [], start, 25)).toBeUndefined();
    for (let i = 0; i < 16; i++) {
      const v = bull(FETCH, `islet:{runs-v${i}}:`, 'j1');
      expect(baker.call(v.keys, v.args, [], [], start, 25)).toBeDefined();
    }
    const past = bull(FETCH, 'islet:{runs-past}:', 'j1');
    expect(baker.call(past.keys, past.args, [], [], start, 25)).toBeUndefined();
    // One of the 16 still is.
    const known = bull(FETCH, 'islet:{runs-v3}:', 'j1');
    expect(baker.call(known.keys, known.args, [], [], start, 25)).toBeDefined();
  });
});
