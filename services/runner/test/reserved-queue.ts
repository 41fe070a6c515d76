/**
 * The fair share's reservations on a real queue, for the tests of a tenant's own order
 * (`reserved-order.test.ts`, `reserved-edges.test.ts`): a mode's BullMQ queue, a worker that fetches
 * only when asked, and a fair share promoting through the runner's own `promote`.
 */
import { createLogger, keys, type Redis } from '@islet/core';
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { noteQueued, type RunJobData } from '@islet/runs';
import { Queue, Worker } from 'bullmq';
import { expect } from 'vitest';
import { createFairShare } from '../src/fair-share.ts';
import type { RunnerContext } from '../src/runner-context.ts';
import { promote } from '../src/tenant-slot.ts';

export const mode = 'read-only' as const;
/** The share's settings as the gateway's add reads them (pool-demand.ts). */
export const on = { ISLET_TENANT_POOL_SHARE: 0.5, ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0 };
const logger = createLogger({ name: 'reserved-queue-test', level: 'silent' });

/** Jobs of `tenant` counted as queued, as the gateway's add counts each (pool-demand.ts). */
export async function queued(redis: Redis, tenant: string, n = 1): Promise<void> {
  for (let i = 0; i < n; i++) await noteQueued(redis, on, mode, tenant);
}

/** The pool's keys these tests write (one slot, `{pool:<mode>}`), for tenants acme and beta. */
function poolKeys(): string[] {
  const found = [keys.poolBusy(mode), keys.poolQueued(mode), keys.poolWaiting(mode), keys.poolSlots(mode)];
  for (const t of ['acme', 'beta'])
    found.push(
      keys.poolTenantLeases(mode, t),
      keys.poolTenantDeferred(mode, t),
      keys.poolTenantReserved(mode, t),
    );
  return found;
}

/** A clean queue and pool, a worker that fetches only when asked, a fair share with a 0.5 share. */
export async function setUpQueue(redis: Redis, leaseMs = 30_000) {
  const queue = new Queue<RunJobData>(runQueueName(mode), { connection: redis, prefix: QUEUE_PREFIX });
  await queue.obliterate({ force: true });
  for (const k of poolKeys()) await redis.del(k);
  const worker = new Worker<RunJobData>(runQueueName(mode), null, {
    connection: redis,
    prefix: QUEUE_PREFIX,
    autorun: false,
  });
  const ctx = {
    modeWorkers: new Map([[mode, { connection: redis, queue, worker }]]),
  } as unknown as RunnerContext;
  const share = createFairShare({
    redis,
    logger,
    promote: (m, jobId) => promote(ctx, m, jobId),
    config: {
      ISLET_RUNNER_CONCURRENCY: 4,
      ISLET_RUNNER_NAME: undefined,
      ISLET_TENANT_POOL_SHARE: 0.5,
      ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0,
      ISLET_TENANT_SHARE_LEASE_MS: leaseMs,
    },
  });
  await share.start([mode]);
  const add = (id: string, tenant: string, delay = 0) =>
    queue.add(
      'run',
      { runId: id, tenant, enqueuedAtMs: Date.now() },
      { jobId: id, ...(delay ? { delay } : {}) },
    );
  /** The next job a worker's fetch takes (BullMQ's own fetch script). */
  const fetch = async () => (await worker.getNextJob('token', { block: false }))?.id;
  const acquire = (tenant: string, id: string) => share.acquire(mode, tenant, id);
  const deferred = (tenant: string) => redis.zrange(keys.poolTenantDeferred(mode, tenant), 0, -1);
  const close = async () => {
    await share.close();
    await worker.close();
    await queue.close();
  };
  return { queue, worker, share, add, fetch, acquire, deferred, close };
}

/** acme (`a1`, `a2`) and beta (`b1`, `b2`) each at their share: the pool's 4 slots full. */
export async function bothAtShare(s: {
  acquire: (tenant: string, id: string) => Promise<{ ok: boolean }>;
}): Promise<void> {
  for (const [t, id] of [
    ['acme', 'a1'],
    ['acme', 'a2'],
    ['beta', 'b1'],
    ['beta', 'b2'],
  ] as const)
    expect((await s.acquire(t, id)).ok).toBe(true);
}
