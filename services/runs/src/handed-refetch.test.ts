/**
 * The end's direct refetch (handed-refetch.ts) against the fused fetch's body it stands for
 * (`fetchAndLook` of BullMQ's moveToActive-11 through bull-quiet.ts), on real Redis: from the same
 * keys, the commands Redis runs inside the script (MONITOR, every argument, in order), the answer
 * and every key after (DUMP, and whether it expires) are the same, and whether it takes the call.
 */
import { moveToActive } from 'bullmq/dist/esm/scripts/moveToActive-11.js';
import type { Redis } from 'ioredis';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { itMatchesTheText, runScript, type ScriptRun } from '../test/script-equivalence.ts';
import { onRedisServer } from '../test/test-redis.ts';
import { MOVE_TO_ACTIVE_SHA1 } from './handed-fetch.ts';
import { handedRefetch, knownFetchSource } from './handed-refetch.ts';
import { fetchAndLook } from './handoff-scripts.ts';

const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
const body = moveToActive.content;
const direct = handedRefetch(body) ?? '';
const textOnly = fetchAndLook(body);
/** As the end's refetch runs it (lease-scripts.ts `endCompleteStartScript`), and without. */
const withDirect = `${direct}\nlocal handed = handedRefetch(KEYS, ARGV)\nif handed then return handed end\n${textOnly}`;
const takes = `${direct}\nreturn handedRefetch(KEYS, ARGV) and 'taken' or 'text'`;

const Q = 'bull:q:';
const TOKEN = 'tok-1';
const TS = 1764960000001n;
/** A baked call's options as their parts: the token, the lock duration, the worker's name. */
const known = [TOKEN, '30000', 'runner-1'];
const KEYS = [
  ...['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc'],
  'marker',
].map((k) => Q + k);

interface Case {
  name: string;
  taken: boolean;
  setUp?: (r: Redis) => Promise<unknown>;
  opts?: Record<string, unknown>;
  fails?: boolean;
}

function argsOf(c: Case): (string | Buffer)[] {
  return [
    Q,
    String(TS),
    packer.pack({ token: TOKEN, lockDuration: 30000, name: 'runner-1', limiter: undefined, ...c.opts }),
  ];
}

async function job(r: Redis, id: string, more: Record<string, string> = {}): Promise<void> {
  await r.hset(Q + id, {
    name: 'run',
    data: '{}',
    opts: '{}',
    timestamp: '1764960000000',
    delay: '0',
    priority: '0',
    ...more,
  });
}
const waiting = async (r: Redis, id = 'r2', more: Record<string, string> = {}) => {
  await job(r, id, more);
  await r.lpush(`${Q}wait`, id);
};
/** A deferred job in the delayed set, due at `dueMs` (score: ms × 0x1000 + a counter). */
const deferred = async (r: Redis, id: string, dueMs: bigint, more: Record<string, string> = {}) => {
  await job(r, id, { delay: '250', ...more });
  await r.zadd(`${Q}delayed`, String(dueMs * 4096n + 1n), id);
};
const NOT_DUE = TS + 250n;
const DUE = TS;

const CASES: Case[] = [
  {
    name: 'a next job waiting, deferrals not due (two tenants)',
    taken: true,
    setUp: (r) => Promise.all([waiting(r), deferred(r, 'd1', NOT_DUE), deferred(r, 'd2', NOT_DUE + 3n)]),
  },
  { name: 'the last job waiting (drained: the marker removed)', taken: true, setUp: (r) => waiting(r) },
  {
    name: 'a next job waiting, an unnamed worker',
    taken: true,
    opts: { name: undefined },
    setUp: (r) => waiting(r),
  },
  {
    name: 'a next job started before',
    taken: true,
    setUp: (r) => waiting(r, 'r2', { processedOn: '5', pb: 'x', ats: '2' }),
  },
  {
    name: 'a next job whose ats is not a number',
    taken: true,
    fails: true,
    setUp: (r) => waiting(r, 'r2', { ats: 'x' }),
  },
  {
    name: 'nothing waiting, a deferral not due (its time answered)',
    taken: true,
    setUp: (r) => deferred(r, 'd1', NOT_DUE),
  },
  { name: 'nothing at all', taken: true },
  {
    name: 'a deferral due, nothing else (promoted, fetched, drained)',
    taken: true,
    setUp: (r) => deferred(r, 'd1', DUE),
  },
  {
    name: 'two deferrals due and a job waiting',
    taken: true,
    setUp: (r) => Promise.all([deferred(r, 'd1', DUE), deferred(r, 'd2', DUE - 4n), waiting(r)]),
  },
  {
    name: 'a deferral due with a priority',
    taken: true,
    setUp: (r) => deferred(r, 'd1', DUE, { priority: '3' }),
  },
  {
    name: 'deferrals due with and without a priority',
    taken: true,
    setUp: (r) => Promise.all([deferred(r, 'd1', DUE, { priority: '3' }), deferred(r, 'd2', DUE)]),
  },
  {
    name: 'a prioritized job only',
    taken: true,
    setUp: (r) =>
      Promise.all([
        job(r, 'p1', { priority: '2' }),
        r.zadd(`${Q}prioritized`, '8589934593', 'p1'),
        r.set(`${Q}pc`, '1'),
      ]),
  },
  {
    name: 'the queue paused, a deferral due',
    taken: true,
    setUp: (r) => Promise.all([deferred(r, 'd1', DUE), waiting(r), r.hset(`${Q}meta`, 'paused', '1')]),
  },
  {
    name: 'a concurrency cap reached, a deferral due',
    taken: true,
    setUp: (r) =>
      Promise.all([
        deferred(r, 'd1', DUE),
        r.lpush(`${Q}active`, 'a1'),
        r.hset(`${Q}meta`, 'concurrency', '1'),
      ]),
  },
  {
    name: 'a concurrency cap not reached',
    taken: true,
    setUp: (r) => Promise.all([waiting(r), r.hset(`${Q}meta`, 'concurrency', '9')]),
  },
  {
    name: 'a rate limit reached',
    taken: true,
    setUp: (r) =>
      Promise.all([
        waiting(r),
        r.hset(`${Q}meta`, 'max', '2', 'duration', '1000'),
        r.set(`${Q}limiter`, '5', 'PX', 60000),
      ]),
  },
  {
    name: 'a rate limit reached, its counter without expiry',
    taken: true,
    setUp: (r) =>
      Promise.all([
        waiting(r),
        r.hset(`${Q}meta`, 'max', '2', 'duration', '1000'),
        r.set(`${Q}limiter`, '5'),
      ]),
  },
  {
    name: 'a rate limit not reached (its counter made)',
    taken: true,
    setUp: (r) => Promise.all([waiting(r), r.hset(`${Q}meta`, 'max', '9', 'duration', '2500.5')]),
  },
  {
    name: "a BullMQ 4 marker '0:1000' before a job",
    taken: true,
    setUp: async (r) => {
      await waiting(r);
      await r.rpush(`${Q}wait`, '0:1000');
    },
  },
  {
    name: "a BullMQ 4 marker '0:0' alone (moveToActive takes the next: none)",
    taken: true,

    setUp: (r) => r.lpush(`${Q}wait`, '0:0'),
  },
  {
    name: 'a limiter of the worker',
    taken: false,
    opts: { limiter: { max: 10, duration: 1000 } },
    setUp: (r) => waiting(r),
  },
  { name: 'no lock token', taken: false, opts: { token: '0' }, setUp: (r) => waiting(r) },
];

let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

/** `c` set up (an active job, the base marker, its own keys) and `source` run on it, with `args` (default: the case's). */
async function runCase(c: Case, source: string, args: (string | Buffer)[] = argsOf(c)): Promise<ScriptRun> {
  const run = await runScript(redis, source, KEYS, args, async (r) => {
    await r.hset(`${Q}meta`, 'opts.maxLenEvents', '10000');
    await r.lpush(`${Q}active`, 'r0');
    await r.zadd(`${Q}marker`, '0', '0');
    await c.setUp?.(r);
  });
  // A rate limit's answer carries the counter's PTTL, which the clock moves between two runs.
  const { answer } = run;
  if (Array.isArray(answer) && typeof answer[2] === 'number' && answer[2] > 0)
    run.answer = [...answer.slice(0, 2), 'pttl', ...answer.slice(3)];
  return run;
}

/** The commands Redis saw, the answer and the keys after: the same as BullMQ's text gives. */
function expectAsText(got: ScriptRun, want: ScriptRun): void {
  expect(got.inner, 'the commands').toEqual(want.inner);
  expect(got.answer, 'the answer').toEqual(want.answer);
  expect(got.after, 'the keys after').toEqual(want.after);
}

describe("the end's direct refetch", () => {
  it('is pinned to the text of BullMQ 5.81.5', () => {
    expect(direct).not.toBe('');
    expect(MOVE_TO_ACTIVE_SHA1).toBe('6c4c6de2bece2ad87657691d945d902df2198f5e');
    expect(handedRefetch(`${body}\n`)).toBeUndefined();
  });

  itMatchesTheText(CASES, runCase, { withDirect, textOnly, takes });
});

describe("the end's direct refetch with a baked end's parts of the options (round 52 `fetch-token`)", () => {
  // ARGV[3] false (a baked end sends no packed options), the parts as BO holds them: no unpack.
  const withKnown = `${direct}\nlocal handed = handedRefetch(KEYS, {ARGV[1], ARGV[2], false}, {ARGV[4], ARGV[5], ARGV[6]})\nif handed then return handed end\nreturn 'text'`;
  for (const c of CASES.filter((c) => c.taken && !c.fails && !c.opts))
    it(`takes: ${c.name}; Redis sees what the text does on the packed options`, async () => {
      const got = await runCase(c, withKnown, argsOf(c).concat(known));
      expectAsText(got, await runCase(c, textOnly));
    });
});

describe("a baked fused fetch's text with the worker's options as their parts (`knownFetchSource`, round 52 `fetch-token`)", () => {
  // The fetch as `fetchLeaseBeginScript` wraps it; ARGV[3] not msgpack ('x' unpacks to a number,
  // which the options' reads fail on): nothing on the way unpacks it.
  const K = 'KO';
  const KO = 'local KO = {ARGV[4], ARGV[5], ARGV[6]}\n';
  const fused =
    knownFetchSource(`${KO}local function fetchJob()\n${textOnly}\nend\nreturn fetchJob()`, body, K) ?? '';
  // The text replaced by a mark (its options read kept, as `knownFetchOptions` asks): the direct path answers first.
  const marked = knownFetchSource(
    `${KO}local function fetchJob()\nif ARGV[1] then return 'text' end\nlocal opts = cmsgpack.unpack(ARGV[3])\nend\nreturn fetchJob()`,
    body,
    K,
  );
  const argsKnown = [Q, String(TS), 'x', ...known];

  it('is made only where the options are read as BullMQ 5 reads them', () => {
    expect(fused).toContain('handedRefetch(KEYS, ARGV, KO)');
    expect(fused.split('cmsgpack.unpack(ARGV[3])')).toHaveLength(2); // the direct path's own, not reached with known parts
    expect(knownFetchSource('local function fetchJob()\nend', body, K)).toBeUndefined();
  });

  for (const c of CASES.filter((c) => !c.fails && !c.opts))
    it(`${c.name}: the direct path answers, Redis sees what the text does on the packed options`, async () => {
      expectAsText(await runCase(c, fused, argsKnown), await runCase(c, textOnly));
      expect((await runCase(c, marked ?? '', argsKnown)).answer).not.toBe('text');
    });
});
