/**
 * The enqueue side of the runners' fair share (runner's fair-share.ts): each job put on a mode's
 * queue is counted for its tenant in the pool's queued index, so a runner taking a flooding
 * tenant's job knows another tenant's job waits behind it. The runner's acquire counts the
 * pick-up. Sent before the job's add on the same connection (one server runs them in that order,
 * in the same write when the caller batches), so a runner never takes a job before its count;
 * with fair share off nothing is sent.
 */
import { type IsletConfig, keys } from '@islet/core';
import type { Redis } from 'ioredis';

type PoolDemandConfig = Pick<IsletConfig, 'ISLET_TENANT_POOL_SHARE' | 'ISLET_TENANT_MAX_EXECUTING_PER_POOL'>;

/** Whether the runners enforce a fair share (the same test as the runner's). */
export function fairShareOn(config: PoolDemandConfig): boolean {
  return config.ISLET_TENANT_POOL_SHARE < 1 || config.ISLET_TENANT_MAX_EXECUTING_PER_POOL > 0;
}

/**
 * Counts one queued job of `tenant` in the `mode` pool. Never rejects: a lost count only means a
 * runner learns of the job when it reaches it in the queue.
 */
export function noteQueued(
  redis: Redis,
  config: PoolDemandConfig,
  mode: string,
  tenant: string,
): Promise<void> {
  if (!fairShareOn(config)) return Promise.resolve();
  return redis.hincrby(keys.poolQueued(mode), tenant, 1).then(
    () => undefined,
    () => undefined,
  );
}

/** Takes a count back for a queued job removed before any runner took it (a refused submit's). */
function noteUnqueued(redis: Redis, config: PoolDemandConfig, mode: string, tenant: string): Promise<void> {
  if (!fairShareOn(config)) return Promise.resolve();
  return redis.hincrby(keys.poolQueued(mode), tenant, -1).then(
    async (left) => {
      if (left <= 0) await redis.hdel(keys.poolQueued(mode), tenant);
    },
    () => undefined,
  );
}

/** The gateway's side as a store: the enqueue counts on the connection its queues share. */
export function createPoolDemandStore(redis: Redis, config: PoolDemandConfig) {
  return {
    /** Whether enqueues are counted (fair share on): a submit's admission then counts its job. */
    on: fairShareOn(config),
    queued: (mode: string, tenant: string) => noteQueued(redis, config, mode, tenant),
    unqueued: (mode: string, tenant: string) => noteUnqueued(redis, config, mode, tenant),
  };
}

export type PoolDemandStore = ReturnType<typeof createPoolDemandStore>;
