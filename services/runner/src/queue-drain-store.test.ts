/**
 * `claimDrained` against a real redis-server and BullMQ's own queue keys: it answers drained only
 * when no job is ready or delayed, and the marker it drops is one a later add sets again (so a
 * worker blocking on it misses no job).
 */
import { type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDrained } from './queue-drain-store.ts';

let server: RedisServer;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
  redis = new Redis({ host: '127.0.0.1', port: server.port });
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

async function withQueue(name: string, body: (queue: Queue) => Promise<void>): Promise<void> {
  const queue = new Queue(name, { connection: { host: '127.0.0.1', port: server.port } });
  try {
    await body(queue);
  } finally {
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

describe('claimDrained', () => {
  it('drops a stale ready marker of an empty queue; the next add sets it again', () =>
    withQueue('qd-empty', async (queue) => {
      await redis.zadd(queue.keys.marker ?? '', 0, '0');
      expect(await claimDrained(await queue.client, queue.keys)).toBe(true);
      expect(await redis.zscore(queue.keys.marker ?? '', '0')).toBeNull();
      await queue.add('run', {}, { jobId: 'a' });
      expect(await redis.zscore(queue.keys.marker ?? '', '0')).toBe('0');
    }));

  it('answers not drained while a job waits', () =>
    withQueue('qd-waiting', async (queue) => {
      await queue.add('run', {}, { jobId: 'a' });
      expect(await claimDrained(await queue.client, queue.keys)).toBe(false);
    }));

  it('answers not drained while a job is delayed (only BullMQ fetch promotes it)', () =>
    withQueue('qd-delayed', async (queue) => {
      await queue.add('run', {}, { jobId: 'a', delay: 60_000 });
      expect(await claimDrained(await queue.client, queue.keys)).toBe(false);
    }));

  it('asks in one command, no MULTI, and drops the marker whether or not the queue is drained', () =>
    withQueue('qd-one', async (queue) => {
      const calls = async (name: string) =>
        Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(await redis.info('commandstats'))?.[1] ?? 0);
      const [multi, scripts] = [await calls('multi'), (await calls('evalsha')) + (await calls('eval'))];
      await queue.add('run', {}, { jobId: 'a' });
      await redis.zadd(queue.keys.marker ?? '', 0, '0');
      expect(await claimDrained(await queue.client, queue.keys)).toBe(false);
      expect(await redis.zscore(queue.keys.marker ?? '', '0')).toBeNull();
      expect(await calls('multi')).toBe(multi);
      expect((await calls('evalsha')) + (await calls('eval'))).toBeGreaterThan(scripts);
    }));

  it('answers not drained while a prioritized job waits', () =>
    withQueue('qd-prioritized', async (queue) => {
      await queue.add('run', {}, { jobId: 'a', priority: 5 });
      expect(await claimDrained(await queue.client, queue.keys)).toBe(false);
    }));
});
