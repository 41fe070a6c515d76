// The skills service's wait on a job's end (BullMQ QueueEvents) against a real redis-server: an
// event written once `ready` resolved is seen, even before QueueEvents' first XREAD reaches Redis
// (it sends a CLIENT SETNAME first); BullMQ's default start (`$`) lost it and the skill's request
// waited out its whole time (round 47, a Redis Cluster e2e).

import { createRedis, type Redis } from '@islet/core';
import { type RedisServer, startRedis } from '@islet/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobEventsStore, eventsKey } from './job-events-store.ts';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = createRedis(server.url);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** The job's `completed` event as the listener got it, or 'missed' once the stream has moved on without it. */
function seen(
  events: ReturnType<ReturnType<typeof createJobEventsStore>['open']>,
  jobId: string,
  marker: string,
) {
  const qe = events.eventsFor('read-only');
  return new Promise<string>((resolve) => {
    qe.on('completed', (args) => {
      if (args.jobId === jobId) resolve(String(args.returnvalue));
      // A later event read before the job's: the job's was skipped (the stream is read in order).
      if (args.jobId === marker) resolve('missed');
    });
  });
}

describe('job events', () => {
  it('an end written right after ready() resolves is seen, on a stream with entries and on an empty one', async () => {
    const key = eventsKey('read-only');
    expect(key).toBe('islet:{runs-read-only}:events');
    for (const round of ['empty', 'with entries']) {
      if (round === 'with entries') await redis.xadd(key, '*', 'event', 'waiting', 'jobId', 'old');
      const events = createJobEventsStore(redis, () => {}).open();
      try {
        await events.ready('read-only');
        const job = `j-${round.replace(' ', '-')}`;
        const got = seen(events, job, `${job}-later`);
        // In the turn ready() resolved in: before QueueEvents' CLIENT SETNAME has answered.
        await redis.xadd(key, '*', 'event', 'completed', 'jobId', job, 'returnvalue', '"done"');
        // Written after QueueEvents blocks: read whichever way it started.
        await new Promise((r) => setTimeout(r, 300));
        await redis.xadd(key, '*', 'event', 'completed', 'jobId', `${job}-later`, 'returnvalue', '"x"');
        expect(await got, round).toBe('done');
      } finally {
        await events.close();
      }
    }
  });

  it('concurrent ready() calls share one QueueEvents; one started while closing makes none', async () => {
    const events = createJobEventsStore(redis, () => {}).open();
    await Promise.all([events.ready('read-only'), events.ready('read-only')]);
    const qe = events.eventsFor('read-only');
    await events.ready('read-only');
    expect(events.eventsFor('read-only')).toBe(qe);
    await events.close();
    const late = createJobEventsStore(redis, () => {}).open();
    const starting = late.ready('workspace-write');
    await late.close();
    await expect(starting).rejects.toThrow('the job events are closed');
  });
});
