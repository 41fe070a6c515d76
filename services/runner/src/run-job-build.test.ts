/**
 * A fetched job built with its options' text decoded once a worker (run-job-build.ts): the same
 * job BullMQ's `Job.fromJSON` builds from the same fields, for a run's job and for jobs whose
 * fields take fromJSON's other branches (retried, deduplicated, a parent, a return value); one
 * decoding for many jobs of the same text, none of its objects shared between two jobs. Real
 * redis-server, BullMQ (run jobs added as the gateway adds them, others by BullMQ's `Queue.add`;
 * read back as its fetch reads them).
 */
import { runJobOptions } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdds } from '../../gateway/src/run-add-store.ts';
import { RunJobBuilder } from './run-job-build.ts';

let server: RedisServer;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

/** A job's fields as BullMQ's fetch hands them on (its hash as an object). */
async function fieldsOf(queue: Queue, id: string) {
  return (await redis.hgetall(queue.toKey(id))) as unknown as Parameters<typeof Job.fromJSON>[1];
}

/** A job's own fields, its functions and its queue's objects left out (they differ by identity only). */
function shape(job: Job): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(job))
    if (typeof v !== 'function' && k !== 'queue' && k !== 'scripts') out[k] = v;
  return out;
}

describe("a fetched job's build", () => {
  it("is the job BullMQ's fromJSON builds, for a run's job and jobs on fromJSON's other branches", async () => {
    const name = 'build-same';
    const connection = { host: '127.0.0.1', port: server.port };
    const queue = new Queue(name, { connection });
    const worker = new Worker(name, null, { connection, autorun: false });
    try {
      const add = runAdds(queue);
      await add('run', { tenant: 'acme', runId: 'r1' }, runJobOptions('r1', 3));
      await add('run', { tenant: 'acme', runId: 'r2' }, runJobOptions('r2', 3));
      await queue.add('parent', { n: 0 }, { jobId: 'p1' });
      await queue.add('dedup', { n: 1 }, { jobId: 'd1', deduplication: { id: 'dd' }, priority: 5 });
      await queue.add('delayed', { n: 2 }, { jobId: 'l1', delay: 60_000, keepLogs: 3 });
      await queue.add('child', { n: 3 }, { jobId: 'c1', parent: { id: 'p1', queue: `bull:${name}` } });
      const r1 = await Job.fromId(queue, 'r1');
      await r1?.updateProgress({ at: 50 });
      // A retried job's fields: a stack trace, a failed reason, attempts made; a finished one's value.
      await redis.hset(queue.toKey('r2'), {
        stacktrace: JSON.stringify(['Error: x\n    at y']),
        failedReason: 'x',
        atm: '1',
        ats: '2',
        stc: '1',
        processedOn: '1700000000000',
        finishedOn: '1700000000500',
        returnvalue: '"done"',
        pb: 'w1',
      });
      const builder = new RunJobBuilder();
      for (const id of ['r1', 'r2', 'd1', 'l1', 'c1']) {
        const fields = await fieldsOf(queue, id);
        const ours = builder.build(worker, fields, id);
        const theirs = Job.fromJSON(worker, fields, id);
        expect(ours).toBeInstanceOf(Job);
        expect(shape(ours)).toEqual(shape(theirs));
        expect(ours.opts).toEqual(theirs.opts);
      }
      expect(builder.builds).toBe(5);
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  it("decodes a text once for every job that stores it, each job its own options' objects", async () => {
    const name = 'build-once';
    const connection = { host: '127.0.0.1', port: server.port };
    const queue = new Queue(name, { connection });
    const worker = new Worker(name, null, { connection, autorun: false });
    try {
      const add = runAdds(queue);
      const ids = ['o1', 'o2', 'o3', 'o4'];
      for (const id of ids) await add('run', { tenant: 'acme', runId: id }, runJobOptions(id, 3));
      const builder = new RunJobBuilder();
      const jobs = [];
      for (const id of ids) jobs.push(builder.build(worker, await fieldsOf(queue, id), id));
      // One `Job.optsFromJSON` for the four (the base's fromJSON: four).
      expect(builder.decodes).toBe(1);
      const [a, b] = jobs as [Job, Job];
      expect(a.opts).toEqual(b.opts);
      expect(a.opts).not.toBe(b.opts);
      expect(a.opts.backoff).not.toBe(b.opts.backoff);
      expect(a.opts.removeOnComplete).not.toBe(b.opts.removeOnComplete);
      expect(a.opts.removeOnFail).not.toBe(b.opts.removeOnFail);
      // A job's own change of its options reaches no other job: a nested value, a top-level one
      // (the constructor's copy; round 52 `runner-own` hands it the kept decoding itself) and the
      // backoff BullMQ's `Backoffs.normalize` passes through as it was given.
      (a.opts.removeOnComplete as { count: number }).count = 1;
      a.opts.attempts = 9;
      (a.opts.backoff as { delay: number }).delay = 1;
      expect((b.opts.removeOnComplete as { count: number }).count).toBe(10_000);
      const c = builder.build(worker, await fieldsOf(queue, 'o3'), 'o3');
      expect((c.opts.removeOnComplete as { count: number }).count).toBe(10_000);
      expect(c.opts.attempts).toBe(3);
      expect((c.opts.backoff as { delay: number }).delay).toBe(500);
      expect(c.opts).toEqual(b.opts);
      // Another text: decoded, and kept in the first one's place.
      await queue.add('other', {}, { jobId: 'x1', attempts: 1 });
      builder.build(worker, await fieldsOf(queue, 'x1'), 'x1');
      builder.build(worker, await fieldsOf(queue, 'x1'), 'x1');
      expect(builder.decodes).toBe(2);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
