// The admission's scripts (admit-and-create-24, admit-tenant-21) against 33923ae1's texts of them,
// on the same keys and arguments: the same answer, the same writes inside Redis in the same order
// (MONITOR: every command but the one MGET, whose keys this release reads in another order) and
// every key the same after (DUMP and whether it expires; a stream by its entries' fields, its ids
// being the time). Round 49 `submit-lean` read the MGET's answer as `heard` itself and made a
// format-2 index entry by one concatenation in place of cjson.encode (test/bench/README.md).

import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { luaDuring } from '../test/lua-during.ts';
import { previousLuaSource } from '../test/previous-runs.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { luaSource } from './lua-scripts.ts';
import { ADMIT_PARAMS } from './run-store-scripts.ts';

const BASE = '33923ae1';
const T = 'islet:tenant:{t:dev}:';
const RUN = 'run-1';
const KEYS = [
  `${T}inflight`,
  `${T}session:s1:runs`,
  `${T}skills`,
  `${T}session:s1:owner`,
  `${T}idem:k1`,
  `${T}rl:1`,
  `${T}index:pending`,
  `${T}index:summaries`,
  `${T}index:ended`,
  `${T}index:sessions`,
  `${T}index:session-stats`,
  `${T}feed`,
  ...Array.from({ length: 9 }, (_, i) => `${T}bytes:${100 - i}`),
  `islet:run:{${RUN}}`,
  `islet:run:{${RUN}}:events`,
];

interface Case {
  name: string;
  /** Keys set before the call. */
  state?: [string, string][];
  /** ARGV overrides by (1-based) position. */
  args?: Record<number, string>;
}

/** admit-and-create-24's arguments as the gateway sends them unbaked (the record's fields as name, value pairs). */
function argsOf(c: Case): string[] {
  const a = [
    RUN,
    '1796654472800',
    '200',
    'key-1',
    '604800',
    '1796654472801',
    '0',
    '1000000',
    RUN,
    '1796654472800',
    '#{"status":"Running","mode":"read-only"}',
    's1',
    'key-1',
    '',
    '604800000',
    'dev',
    '930',
    '1797314400',
    '134217728',
    'islet:session-runs',
    `${T}session:s1:runs`,
    '2000',
    'v1.sealed-status',
    ...['id', RUN, 'tenant', 'dev', 'session', 's1', 'status', 'Running', 'createdAt', '1796654472800'],
  ];
  for (const [at, v] of Object.entries(c.args ?? {})) a[Number(at) - 1] = v;
  return a;
}

const CASES: Case[] = [
  { name: 'admitted, no marker, no owner' },
  {
    name: 'admitted, listeners and a fresh owner of the principal, the session owned',
    state: [
      [`${T}feed:listeners`, '1'],
      [`${T}session:s1:runs:listeners`, '1'],
      [`${T}session:s1:owner`, 'key-1'],
      [`${T}session:s1:owner:fresh`, '1'],
    ],
  },
  { name: 'session taken by another principal', state: [[`${T}session:s1:owner`, 'key-2']] },
  {
    name: 'idempotency checked and held by this run',
    state: [[`${T}idem:k1`, JSON.stringify({ runId: RUN })]],
    args: { 7: '1' },
  },
  {
    name: 'idempotency checked, superseded',
    state: [[`${T}idem:k1`, '{"runId":"other"}']],
    args: { 7: '1' },
  },
  { name: 'idempotency checked, no share', args: { 7: '1', 19: '' } },
  { name: 'no share: the counters not read', args: { 19: '' } },
  {
    name: 'over its storage share, counters in several buckets',
    state: [
      [`${T}bytes:100`, '60'],
      [`${T}bytes:95`, '41'],
    ],
    args: { 19: '100' },
  },
  {
    name: 'over its storage share and rate limited',
    state: [[`${T}bytes:92`, '500']],
    args: { 8: '0', 19: '100' },
  },
  { name: 'rate limited', args: { 8: '0' } },
  { name: 'not counted here (rate limit "")', args: { 8: '' } },
  {
    name: 'over quota, a skill live',
    state: [
      [`${T}skills:live`, '1'],
      [`${T}inflight`, 'z'],
    ],
    args: { 3: '0' },
  },
  { name: 'a format-2 entry with a now of its own', args: { 14: '1796654472999' } },
  { name: 'a format-1 entry (summary JSON text)', args: { 11: '{"status":"Running"}' } },
  { name: 'format 1, owned', state: [[`${T}session:s1:owner`, 'key-1']], args: { 11: '{"s":1}' } },
  {
    name: 'texts cjson escapes (a slash, a quote, a control byte, DEL): the entry as cjson writes it',
    args: { 12: 'a/b', 13: 'say "hi"\u0001', 16: 'de\u007fv' },
  },
  { name: 'a backslash and bytes past 127 in its texts', args: { 12: 'C:\\x', 13: 'é', 14: '7' } },
];

async function keysAfter(redis: Redis): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k of (await redis.keys('*')).sort()) {
    const kind = await redis.type(k);
    const value =
      kind === 'stream'
        ? JSON.stringify((await redis.xrange(k, '-', '+')).map(([, fields]) => fields))
        : (await redis.dumpBuffer(k))?.toString('hex');
    out[k] = `${kind} ${value} ${(await redis.pttl(k)) > 0 ? 'expires' : 'kept'}`;
  }
  return out;
}

async function run(redis: Redis, source: string, keys: string[], args: string[], c: Case) {
  await redis.flushall();
  for (const [k, v] of c.state ?? []) {
    if (k.endsWith(':inflight')) await redis.zadd(k, 1, v);
    else await redis.set(k, v);
  }
  let answer: unknown;
  const inner = await luaDuring(redis, async () => {
    answer = await redis
      .eval(source, keys.length, ...keys, ...args)
      .catch((e: Error) => `error ${e.message}`);
  });
  return {
    answer,
    writes: inner.filter((cmd) => cmd[0]?.toLowerCase() !== 'mget'),
    after: await keysAfter(redis),
  };
}

describe(`the admission's scripts write what ${BASE}'s wrote`, () => {
  const r = useSuiteRedis();
  for (const [name, keyCount, argCount] of [
    ['admit-and-create-24', 23, undefined],
    ['admit-tenant-21', 21, 19],
  ] as const) {
    const head = luaSource(name, ADMIT_PARAMS);
    const base = previousLuaSource(BASE, name, ADMIT_PARAMS);
    it(`${name}: the text differs from ${BASE}'s (what this test holds)`, () => {
      expect(head).not.toBe(base);
      // No stored-bytes helper and its tables; the format-2 entry by one concatenation.
      expect(head).not.toContain('storedBytesOver');
      expect(head).toContain(`entry = '{"a":"' .. t .. '","p":"'`);
    });
    for (const c of CASES) {
      it(`${name}: ${c.name}`, async () => {
        const keys = KEYS.slice(0, keyCount);
        const args = argsOf(c).slice(0, argCount);
        const was = await run(r.a, base, keys, args, c);
        const now = await run(r.a, head, keys, args, c);
        expect(now).toEqual(was);
        // Each case writes something (a refusal its rate count at least, or nothing it reads).
        expect(Object.keys(now.after).length).toBeGreaterThanOrEqual((c.state ?? []).length);
      });
    }
  }
});
