/**
 * A describe's Redis and two clients of it, for the store tests run against each kind of Redis
 * (`@islet/core` and `@islet/runs` redis-cluster.test.ts: a slot-checking node, a real Redis
 * Cluster): started before the describe's tests, given to the test, all stopped after. The clients
 * are made by the caller (`connect`, e.g. core's `createRedis`): testkit imports no other workspace.
 */
import { afterAll, beforeAll } from 'vitest';

/** Set in `beforeAll`: read the fields inside tests (or a later hook), not at describe time. */
export interface RedisClients<S, C> {
  server: S;
  /** The stores' connection. */
  redis: C;
  /** A second connection, for subscriptions. */
  subscriber: C;
}

/**
 * Call inside a describe: its `beforeAll` starts `start()`'s server and connects two clients to it
 * with `connect`, filling the returned object; its `afterAll` disconnects both and stops the server.
 */
export function onRedisClients<S extends { stop(): Promise<void> }, C extends { disconnect(): void }>(
  start: () => Promise<S>,
  connect: (server: S) => C,
  timeoutMs = 60_000,
): RedisClients<S, C> {
  const up = {} as RedisClients<S, C>;
  beforeAll(async () => {
    up.server = await start();
    up.redis = connect(up.server);
    up.subscriber = connect(up.server);
  }, timeoutMs);
  afterAll(async () => {
    up.redis?.disconnect();
    up.subscriber?.disconnect();
    await up.server?.stop();
  });
  return up;
}
