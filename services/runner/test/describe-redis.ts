/**
 * A describe's own Redis for the fair-share tests run on each kind of deployment
 * (reserved-order, reserved-edges, fair-share.cluster): a redis-server, a real six-node Redis
 * Cluster or a slot-checking node (testkit), started before the describe's tests and stopped after.
 */
import { createRedis, type Redis } from '@islet/core';
import { startRedis, startRedisCluster, startSlotCheckingRedis } from '@islet/testkit';
import { afterAll, beforeAll } from 'vitest';

/** Call inside a `describe`: its hooks start and stop the Redis; the returned getter is its client. */
export function describeRedis(kind: 'server' | 'cluster' | 'slot-checking'): () => Redis {
  let client: Redis | undefined;
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    if (kind === 'cluster') {
      const cluster = await startRedisCluster();
      stop = () => cluster.stop();
      client = createRedis({ ISLET_REDIS_MODE: 'cluster', ISLET_REDIS_URL: cluster.seeds });
    } else {
      const node = kind === 'server' ? await startRedis() : await startSlotCheckingRedis();
      stop = () => node.stop();
      client = createRedis(node.url);
    }
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    await stop?.();
  });
  return () => {
    if (!client) throw new Error(`no ${kind} Redis: describeRedis's beforeAll has not run`);
    return client;
  };
}
