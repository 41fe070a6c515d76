/**
 * A test file's own redis-server, one client on it and a BullMQ queue on a second connection (the
 * runner's script tests that drive the scripts by hand: baked-fetch, end-start-baked,
 * fetch-takeback), started at the file's top (`const { redis, queue } = await onQueueServer(name)`)
 * and closed in the file's `afterAll` (after the file's own `afterAll` hooks: vitest runs them last
 * registered first).
 */
import { createRedis } from '@islet/core';
import { QUEUE_PREFIX } from '@islet/protocol';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll } from 'vitest';

export interface QueueServer {
  server: RedisServer;
  redis: Redis;
  /** The queue's connection (a duplicate of `redis`), for a worker of the same queue. */
  queueConnection: Redis;
  queue: Queue;
}

/** `name`: the queue's (its keys `bull:<name>:…`). */
export async function onQueueServer(name: string): Promise<QueueServer> {
  const server = await startRedis();
  const redis = createRedis(server.url);
  const queueConnection = redis.duplicate();
  const queue = new Queue(name, { connection: queueConnection, prefix: QUEUE_PREFIX });
  afterAll(async () => {
    await queue.close();
    queueConnection.disconnect();
    redis.disconnect();
    await server.stop();
  });
  return { server, redis, queueConnection, queue };
}
