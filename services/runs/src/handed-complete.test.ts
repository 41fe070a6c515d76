/**
 * The end's direct completion (handed-complete.ts) against BullMQ's moveToFinished-14 text run as
 * the end runs it (bull-quiet.ts `quietCompleteAsk` then `quietComplete`), on real Redis: from the
 * same keys, the commands Redis runs inside the script (MONITOR, every argument, in order), the
 * answer and every key after (DUMP, and whether it expires) are the same, for the settings the
 * direct path takes and for those it must leave to the text; and which of them it takes.
 */
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import type { Redis } from 'ioredis';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { type CompleteCase as Case, deferralCases } from '../test/complete-deferrals.ts';
import { itMatchesTheText, runScript, type ScriptRun } from '../test/script-equivalence.ts';
import { onRedisServer } from '../test/test-redis.ts';
import { quietComplete, quietCompleteAsk } from './bull-quiet.ts';
import { handedComplete, MOVE_TO_FINISHED_SHA1 } from './handed-complete.ts';

// BullMQ's own packer for the worker's options (classes/scripts.js).
const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
const body = moveToFinished.content;
const direct = handedComplete(body) ?? '';
const ask = `local seen = {}\n${quietCompleteAsk('KEYS', 'ARGV', 'seen', "'own'")}\n`;
/** As the end runs it with the direct path (`endAndCompleteScript`), and without. */
const withDirect = `${ask}local function complete(KEYS, ARGV)\n${quietComplete(body, 'seen', direct)}\nend\nreturn complete(KEYS, ARGV)`;
const textOnly = `${ask}local function complete(KEYS, ARGV)\n${quietComplete(body, 'seen')}\nend\nreturn complete(KEYS, ARGV)`;
/** Whether the direct path answers (taken) or leaves the call to the text. */
const takes = `${ask}${direct}\nlocal _, answer = handedComplete(KEYS, ARGV, seen)\nreturn answer == nil and 'text' or 'taken'`;

const Q = 'bull:q:';
const ID = 'r1';
const TOKEN = 'tok-1';
const KEYS = [
  ...['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc'],
  ...['completed', ID, 'metrics:completed', 'marker'],
].map((k) => Q + k);

function argsOf(c: Case): (string | Buffer)[] {
  const opts = {
    token: TOKEN,
    name: 'runner-1',
    keepJobs: { age: 3600, count: 1000 },
    limiter: undefined,
    lockDuration: 30000,
    attempts: 1,
    maxMetricsSize: '',
    fpof: false,
    cpof: false,
    idof: false,
    rdof: false,
    ...c.opts,
  };
  const args: (string | Buffer)[] = [
    ID,
    c.ts ?? '1764960000001',
    c.target === 'failed' ? 'failedReason' : 'returnvalue',
    '{"ok":true}',
    c.target ?? 'completed',
    c.fetchNext ?? '1',
    Q,
    packer.pack(opts),
  ];
  if (c.fields) args.push(c.fields);
  return args;
}

/** An active job of a run, as the gateway's add and the runner's fetch leave it. */
async function plain(r: Redis): Promise<void> {
  await r.hset(Q + ID, {
    name: 'run',
    data: '{"runId":"r1"}',
    opts: '{"attempts":1,"removeOnComplete":{"age":3600,"count":1000}}',
    timestamp: '1764960000000',
    delay: '0',
    priority: '0',
    processedOn: '1764960000000',
    pb: 'runner-1',
    ats: '1',
  });
  await r.lpush(`${Q}active`, 'r0', ID);
  await r.set(`${Q + ID}:lock`, TOKEN, 'PX', 30000);
  await r.hset(`${Q}meta`, 'opts.maxLenEvents', '10000');
  await r.zadd(`${Q}completed`, '1764950000000', 'r-old');
  await r.hset(`${Q}r-old`, 'name', 'run', 'timestamp', '1764950000000');
}

const CASES: Case[] = [
  { name: 'a first completion, the next job asked for, none there', taken: true },
  { name: 'no next job asked for', taken: true, fetchNext: '0' },
  { name: 'a job completed before (atm 2)', taken: true, setUp: (r) => r.hset(Q + ID, 'atm', '2') },
  { name: 'the queue paused', taken: true, setUp: (r) => r.hset(`${Q}meta`, 'paused', '1') },
  { name: 'a concurrency cap reached', taken: true, setUp: (r) => r.hset(`${Q}meta`, 'concurrency', '1') },
  {
    name: 'a concurrency cap not reached',
    taken: true,
    setUp: (r) => r.hset(`${Q}meta`, 'concurrency', '9'),
  },
  {
    name: 'a rate limit reached (its counter without expiry)',
    taken: true,
    setUp: (r) =>
      Promise.all([r.hset(`${Q}meta`, 'max', '2', 'duration', '1000'), r.set(`${Q}limiter`, '5')]),
  },
  {
    name: 'a rate limit not reached',
    taken: true,
    setUp: (r) => r.hset(`${Q}meta`, 'max', '9', 'duration', '1000'),
  },
  { name: 'keepJobs: an age only', taken: true, opts: { keepJobs: { age: 3600 } } },
  { name: 'keepJobs: all kept (count -1)', taken: true, opts: { keepJobs: { count: -1 } } },
  { name: "another worker's lock", taken: true, setUp: (r) => r.set(`${Q + ID}:lock`, 'other', 'PX', 30000) },
  { name: 'the lock missing', taken: true, setUp: (r) => r.del(`${Q + ID}:lock`) },
  { name: 'the job not in active', taken: true, setUp: (r) => r.lrem(`${Q}active`, 0, ID) },
  {
    name: 'a job with a parent',
    taken: false,
    setUp: (r) =>
      Promise.all([
        r.hset(Q + ID, 'parentKey', 'bull:p:p1', 'parent', '{"id":"p1","queueKey":"bull:p"}'),
        r.sadd('bull:p:p1:dependencies', Q + ID),
        r.hset('bull:p:p1', 'name', 'parent', 'timestamp', '1'),
      ]),
  },
  {
    name: "a job with a parent's JSON only",
    taken: false,
    setUp: (r) => r.hset(Q + ID, 'parent', '{"id":"p1","queueKey":"bull:p"}'),
  },
  {
    name: "a job with a parent's key only",
    taken: false,
    setUp: (r) => r.hset(Q + ID, 'parentKey', 'bull:p:p1'),
  },
  { name: 'a job with a deduplication id', taken: false, setUp: (r) => r.hset(Q + ID, 'deid', 'd1') },
  { name: 'removeOnComplete true (count 0)', taken: false, opts: { keepJobs: { count: 0 } } },
  { name: 'the completion that trims the set', taken: false, ts: '1764960000000' },
  { name: 'a next job waiting', taken: true, setUp: (r) => nextJob(r) },
  {
    name: 'a next job waiting, no next job asked for',
    taken: true,
    fetchNext: '0',
    setUp: (r) => nextJob(r),
  },
  {
    name: 'a next job waiting, started before',
    taken: true,
    setUp: (r) => nextJob(r, { processedOn: '5', pb: 'x', ats: '2' }),
  },
  {
    name: 'a next job waiting, its ats not a number',
    taken: true,
    fails: true,
    setUp: (r) => nextJob(r, { ats: 'x' }),
  },
  {
    name: 'a next job waiting, an unnamed worker',
    taken: true,
    opts: { name: undefined },
    setUp: (r) => nextJob(r),
  },
  {
    name: 'a next job waiting, the queue paused',
    taken: true,
    setUp: (r) => Promise.all([nextJob(r), r.hset(`${Q}meta`, 'paused', '1')]),
  },
  {
    name: 'a next job waiting, a rate limit (its counter made)',
    taken: true,
    setUp: (r) => Promise.all([nextJob(r), r.hset(`${Q}meta`, 'max', '9', 'duration', '2500.5')]),
  },
  {
    name: 'a next job waiting, a rate limit (its counter there)',
    taken: true,
    setUp: (r) =>
      Promise.all([
        nextJob(r),
        r.hset(`${Q}meta`, 'max', '9', 'duration', '1000'),
        r.set(`${Q}limiter`, '3'),
      ]),
  },
  { name: "a BullMQ 4 marker '0:1000' waiting", taken: true, setUp: (r) => r.lpush(`${Q}wait`, '0:1000') },
  {
    name: "a BullMQ 4 marker '0:0' waiting",
    taken: true,
    fails: true,
    setUp: (r) => r.lpush(`${Q}wait`, '0:0'),
  },
  { name: 'a delayed job', taken: true, setUp: (r) => r.zadd(`${Q}delayed`, '99999999999999999', 'r9') },
  ...deferralCases(Q, ID, nextJob),
  { name: "the job's dependencies", taken: false, setUp: (r) => r.sadd(`${Q + ID}:dependencies`, 'x') },
  { name: 'an atm not a number', taken: false, fails: true, setUp: (r) => r.hset(Q + ID, 'atm', 'x') },
  { name: 'metrics', taken: false, opts: { maxMetricsSize: 100 } },
  { name: 'a limiter of the worker', taken: false, opts: { limiter: { max: 10, duration: 1000 } } },
  { name: 'no lock token', taken: false, opts: { token: '0' } },
  { name: 'a failure', taken: false, target: 'failed' },
  { name: 'fields to update', taken: false, fields: packer.pack(['progress', '5']) },
  { name: 'the job missing', taken: false, setUp: (r) => r.del(Q + ID) },
];

async function nextJob(r: Redis, more: Record<string, string> = {}): Promise<void> {
  await r.hset(`${Q}r2`, {
    name: 'run',
    data: '{}',
    opts: '{}',
    timestamp: '1764960000000',
    delay: '0',
    priority: '0',
    ...more,
  });
  await r.lpush(`${Q}wait`, 'r2');
}

let redis: Redis;
onRedisServer(
  (client) => {
    redis = client;
  },
  { appendOnly: false },
);

/** From the case's keys: the script's answer, the commands it ran inside Redis, the keys after. */
const runCase = (c: Case, source: string): Promise<ScriptRun> =>
  runScript(redis, source, KEYS, argsOf(c), async (r) => {
    await plain(r);
    await c.setUp?.(r);
  });

describe("the end's direct completion", () => {
  it('is pinned to the text of BullMQ 5.81.5', () => {
    expect(direct).not.toBe('');
    expect(MOVE_TO_FINISHED_SHA1).toBe('11d69c87800ed307165e6eeba9c2e94d9fb95fcd');
    expect(handedComplete(`${body}\n`)).toBeUndefined();
  });

  itMatchesTheText(CASES, runCase, { withDirect, textOnly, takes });
});
