/**
 * The settings of a queue holding the fair share's deferrals for `handed-complete.test.ts` (the
 * end's direct completion against moveToFinished-14's text): the pool's waiting list (the end's
 * own key in its EXISTS, `'own'` there) and jobs in the delayed set, due or not, beside the plain
 * active job that test sets up.
 */
import type { Redis } from 'ioredis';

export interface CompleteCase {
  name: string;
  taken: boolean;
  /** Changes to the plain active job and queue set up before it. */
  setUp?: (r: Redis) => Promise<unknown>;
  opts?: Record<string, unknown>;
  ts?: string;
  fetchNext?: string;
  target?: string;
  fields?: Buffer;
  /** The text's own answer is an error (an HINCRBY of a hash value not an integer; a '0:0' marker's missing job). */
  fails?: boolean;
}

/** The cases, on the queue `Q` (its prefix) whose active job is `ID`; `nextJob` puts a job on its wait list. */
export function deferralCases(
  Q: string,
  ID: string,
  nextJob: (r: Redis, more?: Record<string, string>) => Promise<void>,
): CompleteCase[] {
  /** A job the fair share deferred (moved to delayed), due at `dueMs` (BullMQ's score: ms × 0x1000 + a counter). */
  async function deferred(
    r: Redis,
    id: string,
    dueMs: bigint,
    more: Record<string, string> = {},
  ): Promise<void> {
    await r.hset(Q + id, {
      name: 'run',
      data: '{}',
      opts: '{}',
      timestamp: '1764960000000',
      delay: '250',
      priority: '0',
      ...more,
    });
    await r.zadd(`${Q}delayed`, String(dueMs * 4096n + 1n), id);
  }
  const NOT_DUE = 1764960000251n;
  const DUE = 1764960000001n;
  /** The pool's waiting list (the end's own key in its EXISTS; `'own'` here): two tenants at work. */
  const waiting = (r: Redis) => r.rpush('own', 'tenant-b');

  /** A queue holding deferrals (the end's EXISTS found the delayed set or its own key there). */
  return [
    { name: "the pool's waiting list there", taken: true, setUp: waiting },
    {
      name: 'a deferral not due, the next job waiting (two tenants)',
      taken: true,
      setUp: (r) => Promise.all([waiting(r), deferred(r, 'r9', NOT_DUE), nextJob(r)]),
    },
    {
      name: 'a deferral not due, nothing waiting (its time answered)',
      taken: true,
      setUp: (r) => Promise.all([waiting(r), deferred(r, 'r9', NOT_DUE)]),
    },
    {
      name: 'a deferral not due, no next job asked for',
      taken: true,
      fetchNext: '0',
      setUp: (r) => Promise.all([waiting(r), deferred(r, 'r9', NOT_DUE), nextJob(r)]),
    },
    {
      name: 'a deferral due, nothing else waiting (promoted and fetched)',
      taken: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE), deferred(r, 'r8', NOT_DUE)]),
    },
    {
      name: 'two deferrals due and a next job waiting',
      taken: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE), deferred(r, 'r7', DUE - 5n), nextJob(r)]),
    },
    {
      name: 'a deferral due with a priority (prioritized, then fetched)',
      taken: true,
      setUp: (r) => deferred(r, 'r9', DUE, { priority: '3' }),
    },
    {
      name: 'deferrals due with and without a priority, a next job waiting',
      taken: true,
      setUp: (r) =>
        Promise.all([deferred(r, 'r9', DUE, { priority: '3' }), deferred(r, 'r7', DUE - 5n), nextJob(r)]),
    },
    {
      name: 'a deferral due, the queue paused',
      taken: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE), r.hset(`${Q}meta`, 'paused', '1')]),
    },
    {
      name: 'a deferral due, a concurrency cap reached',
      taken: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE), r.hset(`${Q}meta`, 'concurrency', '1')]),
    },
    {
      name: 'a deferral due, a rate limit reached',
      taken: true,
      setUp: (r) =>
        Promise.all([
          deferred(r, 'r9', DUE),
          r.hset(`${Q}meta`, 'max', '2', 'duration', '1000'),
          r.set(`${Q}limiter`, '5'),
        ]),
    },
    {
      name: 'a deferral due, a rate limit not reached (its counter made)',
      taken: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE), r.hset(`${Q}meta`, 'max', '9', 'duration', '1000')]),
    },
    {
      name: "a deferral not due, a BullMQ 4 marker '0:1000' waiting",
      taken: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', NOT_DUE), r.lpush(`${Q}wait`, '0:1000')]),
    },
    {
      name: "a deferral due with a priority, a BullMQ 4 marker '0:0' waiting",
      taken: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE, { priority: '2' }), r.lpush(`${Q}wait`, '0:0')]),
    },
    {
      name: "a deferral not due, a BullMQ 4 marker '0:0' waiting",
      taken: true,
      fails: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', NOT_DUE), r.lpush(`${Q}wait`, '0:0')]),
    },
    {
      name: 'a deferral due, a next job started before, an unnamed worker',
      taken: true,
      opts: { name: undefined },
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE), nextJob(r, { processedOn: '5', ats: '2' })]),
    },
    {
      name: 'a deferral, the completion that trims the set',
      taken: false,
      ts: '1764960000000',
      setUp: (r) => Promise.all([waiting(r), deferred(r, 'r9', NOT_DUE)]),
    },
    {
      name: "a deferral and the job's dependencies (the probe's answer handed to the text)",
      taken: false,
      setUp: (r) => Promise.all([deferred(r, 'r9', NOT_DUE), r.sadd(`${Q + ID}:dependencies`, 'x')]),
    },
    {
      name: 'a deferral and a prioritized job (the probe finds it)',
      taken: false,
      setUp: (r) => Promise.all([deferred(r, 'r9', NOT_DUE), r.zadd(`${Q}prioritized`, '5', 'r5')]),
    },
    {
      name: 'a deferral and a job with a parent (refused after the probe and the read)',
      taken: false,
      setUp: (r) =>
        Promise.all([deferred(r, 'r9', DUE), r.hset(Q + ID, 'parent', '{"id":"p1","queueKey":"bull:p"}')]),
    },
    {
      name: 'a deferral and a dedup id',
      taken: false,
      setUp: (r) => Promise.all([waiting(r), deferred(r, 'r9', DUE), r.hset(Q + ID, 'deid', 'd1')]),
    },
    {
      name: 'a deferral, an atm not a number',
      taken: false,
      fails: true,
      setUp: (r) => Promise.all([deferred(r, 'r9', DUE), r.hset(Q + ID, 'atm', 'x')]),
    },
    {
      name: 'a deferral, a failure',
      taken: false,
      target: 'failed',
      setUp: (r) => Promise.all([waiting(r), deferred(r, 'r9', DUE)]),
    },
    {
      name: 'a deferral, a limiter of the worker',
      taken: false,
      opts: { limiter: { max: 10, duration: 1000 } },
      setUp: (r) => deferred(r, 'r9', DUE),
    },
  ];
}
