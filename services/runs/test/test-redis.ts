import { type Redis as CoreRedis, createRedis } from '@islet/core';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';

/** Set in `beforeAll`: read the fields inside tests, not at describe time. */
export interface SuiteRedis {
  server: RedisServer;
  /** Two connections to the one server, to act as two gateway replicas. */
  a: Redis;
  b: Redis;
}

/** One real Redis for the enclosing describe block, with two connections; all stopped after it. */
export function useSuiteRedis(): SuiteRedis {
  const r = {} as SuiteRedis;
  beforeAll(async () => {
    r.server = await startRedis();
    r.a = new Redis(r.server.url);
    r.b = new Redis(r.server.url);
  });
  afterAll(async () => {
    r.a.disconnect();
    r.b.disconnect();
    await r.server.stop();
  });
  return r;
}

/** Runs `body` against a redis-server of its own (no append-only file), both stopped when `body` settles. */
export async function withRedis(body: (redis: Redis) => Promise<void>): Promise<void> {
  const server = await startRedis({ appendOnly: false });
  const redis = new Redis(server.url);
  try {
    await body(redis);
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

/**
 * One redis-server for the enclosing file or describe block, started in `beforeAll` and stopped in
 * `afterAll`; `set` is given its client (core's `createRedis`, as the stores' own) once it is up.
 * (The runner's tests on a plain redis-server use it too.)
 */
export function onRedisServer(
  set: (redis: CoreRedis) => void,
  options?: Parameters<typeof startRedis>[0],
): void {
  let server: RedisServer | undefined;
  let redis: CoreRedis | undefined;
  beforeAll(async () => {
    server = await startRedis(options);
    redis = createRedis(server.url);
    set(redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
}
