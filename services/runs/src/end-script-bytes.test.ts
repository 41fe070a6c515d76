// A run's end scripts (finish-run-release-19: the end with its lease given back, as the runner's
// fused end runs it; finish-run-14 and transition-4, which hold the same transition; lease-release-5,
// the lease given back alone) against eb99e4b0's texts of them, on the same keys, arguments and
// state: the same answer, the same commands inside Redis in the same order with the same arguments
// (the PUBLISHed end among them) and every key the same after (DUMP; a stream by its entries'
// fields, a sorted set by its members and scores). Redis's clock is read by the pool's grant and by
// the events' ids: a time within a day of now is compared as `NOW`. Round 50 `end-script` made the
// release's helpers and the `end3` build's functions only where a call reaches them
// (test/bench/README.md).

import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { luaDuring } from '../test/lua-during.ts';
import { previousLuaSource } from '../test/previous-runs.ts';
import { useSuiteRedis } from '../test/test-redis.ts';
import { luaSource } from './lua-scripts.ts';
import { FINISH_TENANT_PARAMS } from './run-index-scripts.ts';

const BASE = 'eb99e4b0';
const PUSH_PARAMS = { END_PUSH_MAX_BYTES: 32 * 1024, END3_MIN_BYTES: 1024 };
const END_PARAMS = { ...PUSH_PARAMS, ...FINISH_TENANT_PARAMS };
/** Each script's parameters, as run-store-scripts.ts and lease-scripts.ts give them. */
const PARAMS: Record<string, Record<string, string | number>> = {
  'finish-run-release-19': { ...END_PARAMS, POOL_SEEN: 'nil' },
  'finish-run-14': END_PARAMS,
  'transition-4': PUSH_PARAMS,
  'lease-release-5': {},
};
const ID = 'r1';
const T = 'islet:tenant:{t:acme}:';
const P = 'islet:{pool:read-only}:';
const RUN_KEYS = [`islet:run:{${ID}}`, `islet:run:{${ID}}:events`, `islet:journal:{${ID}}`];
const TENANT_KEYS = [
  `${T}inflight`,
  `${T}index:pending`,
  `${T}index:summaries`,
  `${T}index:ended`,
  `${T}index:sessions`,
  `${T}index:session-stats`,
  `${T}usage:2026-12-07`,
  `${T}feed`,
  `${T}health:499073`,
];
const POOL_KEYS = [`${P}slots`, `${P}busy`, `${P}queued`, `${P}waiting`, `${P}tenant:acme:leases`];
const END_KEYS = [...RUN_KEYS, ...TENANT_KEYS, `${T}bytes:23765`, `islet:decisions:{${ID}}`];
const FUTURE_MS = '9999999999999';

type State = (redis: Redis) => Promise<unknown>;

interface Case {
  name: string;
  /** The end's mode (ARGV[7]). */
  mode?: string;
  /** The fields the end writes. */
  fields?: string[];
  state?: State;
  /** Kind, output bytes, binding calls, CPU ms, usage expiry (finish-tenant's ARGV[4..8]). */
  usage?: [string, string, string, string, string];
  /** The release's job id (lease-release's ARGV[1]). */
  job?: string;
  /** A case of the pool's release: finish-run-release-19's alone. */
  pool?: boolean;
}

const record =
  (fields: Record<string, string>): State =>
  (r) =>
    r.hset(RUN_KEYS[0] as string, fields);
const RUNNING = {
  id: ID,
  tenant: 'acme',
  status: 'Running',
  attempts: '1',
  pick: 'v1.k1.'.padEnd(300, 'p'),
  description: 'v1.k1.desc',
  createdAt: '1796665400000',
  updatedAt: '1796665401000',
  cancelRequested: '0',
};
const callEntry = (i: number) =>
  `{"t":"fetch","s":"ok","o":"v1.k1.${'o'.repeat(120)}","n":${i},"h":"https:\\/\\/example.com"}`;
const withCalls: State = async (r) => {
  await record(RUNNING)(r);
  const journal: string[] = ['#attempt', '1', '#seq', '12'];
  for (let i = 0; i < 12; i++) journal.push(String(i), callEntry(i), `#c${i}`, 'claim-part');
  await r.hset(RUN_KEYS[2] as string, journal);
};
/** A tenant waiting with a deferred job, a free slot. */
const deferred =
  (tenant = 'acme', held = 0): State =>
  async (r) => {
    await record({ ...RUNNING, quiet: '1' })(r);
    await r.hset(`${P}slots`, 'runner-1', `4:${FUTURE_MS}`);
    await r.zadd(`${P}waiting`, 1000, tenant);
    await r.zadd(`${P}tenant:${tenant}:deferred`, 1500, 'job-9', 1600, 'job-10');
    for (let i = 0; i < held; i++) await r.zadd(`${P}tenant:${tenant}:leases`, FUTURE_MS, `held-${i}`);
    await r.zadd(`${P}tenant:acme:leases`, FUTURE_MS, 'job-1');
    await r.zadd(`${P}busy`, FUTURE_MS, 'job-1');
  };

const END_CASES: Case[] = [
  {
    name: 'pushed, no call sent, quiet, nothing waiting',
    mode: '4',
    state: record({ ...RUNNING, quiet: '1' }),
  },
  { name: 'pushed (format 1), no call sent, announced', mode: '2', state: record(RUNNING) },
  { name: 'pushed with calls: end3', mode: '3d', state: withCalls },
  {
    name: 'pushed with calls, format 1: end2 of the journal less its claim parts',
    mode: '1d',
    state: withCalls,
  },
  { name: 'not pushed, no call sent', mode: '5', state: record(RUNNING) },
  { name: 'not pushed, its decisions expired', mode: '0d', state: withCalls },
  {
    name: 'a Failed end with a kind and usage, its output past the record',
    mode: '4',
    fields: ['status', 'Failed', 'kind', 'timeout', 'result', 'v1.k1.res', 'updatedAt', '1796665402000'],
    usage: ['timeout', '12', '3', '40', ''],
    state: record(RUNNING),
  },
  {
    name: 'a field written twice, one the record has and one it has not: the last mention pushed',
    mode: '2',
    fields: [
      'status',
      'Running',
      'kind',
      'a',
      'status',
      'Completed',
      'kind',
      'b',
      'updatedAt',
      '1796665402000',
    ],
    state: record(RUNNING),
  },
  { name: 'already final: nothing written', mode: '4', state: record({ ...RUNNING, status: 'Completed' }) },
  { name: 'no record', mode: '4' },
  {
    name: 'a tenant waiting: the freed slot granted to its oldest deferred job',
    mode: '4',
    pool: true,
    state: deferred(),
  },
  { name: 'another tenant waiting: granted to it', mode: '4', pool: true, state: deferred('beta') },
  {
    name: 'a tenant waiting at its share, none other queued: granted over it',
    mode: '4',
    pool: true,
    state: deferred('beta', 4),
  },
  {
    name: 'a tenant waiting, the pool full: not granted',
    mode: '4',
    pool: true,
    state: async (r) => {
      await deferred()(r);
      for (let i = 0; i < 4; i++) await r.zadd(`${P}busy`, FUTURE_MS, `other-${i}`);
    },
  },
  { name: 'no lease held (no job id)', mode: '4', pool: true, job: '', state: record(RUNNING) },
];

/** A number within a day of now (Redis's clock: a grant's score, an event's id) as `NOW`. */
function masked(text: string): string {
  return text.replace(/\d{13}/g, (n) => (Math.abs(Number(n) - Date.now()) < 86_400_000 ? 'NOW' : n));
}

async function keysAfter(redis: Redis): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k of (await redis.keys('*')).sort()) {
    const kind = await redis.type(k);
    let value: string | undefined;
    if (kind === 'stream') value = JSON.stringify((await redis.xrange(k, '-', '+')).map(([, f]) => f));
    else if (kind === 'zset') value = (await redis.zrange(k, 0, -1, 'WITHSCORES')).join(' ');
    else value = (await redis.dumpBuffer(k))?.toString('hex');
    out[k] = masked(`${kind} ${value} ${(await redis.pttl(k)) > 0 ? 'expires' : 'kept'}`);
  }
  return out;
}

async function run(redis: Redis, source: string, keys: string[], args: string[], state?: State) {
  await redis.flushall();
  await state?.(redis);
  let answer: unknown;
  const inner = await luaDuring(redis, async () => {
    answer = await redis
      .eval(source, keys.length, ...keys, ...args)
      .catch((e: Error) => `error ${e.message}`);
  });
  return { answer, commands: inner.map((cmd) => masked(cmd.join(' '))), after: await keysAfter(redis) };
}

function endArgs(c: Case): string[] {
  const [kind, output, calls, cpu, usageExpiry] = c.usage ?? ['', '1', '0', '0', ''];
  const fields = c.fields ?? ['status', 'Completed', 'ended', 'v1.k1.ended', 'updatedAt', '1796665402000'];
  const status = fields[fields.indexOf('status') + 1] as string;
  return [
    ...[ID, 'islet:run-events', 'end', 'v1.k1.sealed-end', '2000', '604800', c.mode ?? '4'],
    ...[ID, status, '1796665402000', kind, output, calls, cpu, usageExpiry, 'acme', '114', '1797314400'],
    ...[c.job ?? 'job-1', '0.5', '0', '30000', `${P}tenant:`],
    ...fields,
  ];
}

describe(`a run's end scripts write and publish what ${BASE}'s did`, () => {
  const r = useSuiteRedis();

  it(`the texts differ from ${BASE}'s (what this test holds)`, () => {
    const head = luaSource('finish-run-release-19', PARAMS['finish-run-release-19']);
    expect(head).not.toBe(
      previousLuaSource(BASE, 'finish-run-release-19', PARAMS['finish-run-release-19'] ?? {}),
    );
    // The release's helpers after its common answer; the end3 build's inside its branch.
    const release = head.slice(head.indexOf('local function releaseLease('));
    expect(release.indexOf('local function poolQuota(')).toBeGreaterThan(release.indexOf('return false'));
    const transition = head.slice(head.indexOf('local function writeTransition('));
    expect(transition).toContain('local function end3Safe(');
  });

  for (const [name, keys, argsOf] of [
    ['finish-run-release-19', [...END_KEYS, ...POOL_KEYS], endArgs],
    [
      'finish-run-14',
      END_KEYS,
      (c: Case) => {
        const a = endArgs(c);
        return [...a.slice(0, 18), ...a.slice(23)];
      },
    ],
    ['transition-4', RUN_KEYS, (c: Case) => [...endArgs(c).slice(0, 7), ...endArgs(c).slice(23)]],
  ] as const) {
    const head = luaSource(name, PARAMS[name]);
    const base = previousLuaSource(BASE, name, PARAMS[name] ?? {});
    const cases = name === 'finish-run-release-19' ? END_CASES : END_CASES.filter((c) => !c.pool);
    for (const c of cases) {
      it(`${name}: ${c.name}`, async () => {
        const was = await run(r.a, base, [...keys], argsOf(c), c.state);
        const now = await run(r.a, head, [...keys], argsOf(c), c.state);
        expect(now).toEqual(was);
        expect(now.commands.length).toBeGreaterThan(0);
      });
    }
  }

  const RELEASE_CASES: [string, string[], State][] = [
    ['nothing waiting', [], record(RUNNING)],
    ['a tenant waiting', [], deferred()],
    ['given up, its job back', ['acme', 'back'], deferred()],
    ['given up, its job gone', ['acme', 'gone'], deferred()],
    [
      'given up, its place no longer kept',
      ['acme', 'back'],
      async (r) => {
        await deferred()(r);
        await r.zadd(`${P}tenant:acme:reserved`, 1200, 'job-1');
      },
    ],
  ];
  const head = luaSource('lease-release-5');
  const base = previousLuaSource(BASE, 'lease-release-5', {});
  for (const [name, extra, state] of RELEASE_CASES) {
    it(`lease-release-5: ${name}`, async () => {
      const args = ['job-1', '0.5', '0', '30000', `${P}tenant:`, ...extra];
      const was = await run(r.a, base, POOL_KEYS, args, state);
      const now = await run(r.a, head, POOL_KEYS, args, state);
      expect(now).toEqual(was);
    });
  }
});
