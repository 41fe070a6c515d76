/**
 * Reads a mode's queue depth from Redis with BullMQ's own counters (so the key layout stays
 * BullMQ's business; delayed = fair-share deferrals, hand-backs and retries, see QueueDepth) plus
 * the paused-for-decision sorted set, and which runner pods hold
 * active jobs (BullMQ records the worker's name — the pod name — as `processedBy`).
 */
import { pausedRunsKey, QUEUE_PREFIX, runQueueName, type SandboxMode } from '@islet/protocol';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { QueueDepth } from './scaling.ts';

interface DepthReading {
  depth: QueueDepth;
  activeByPod: Map<string, number>;
}

export interface DepthReader {
  read(mode: SandboxMode): Promise<DepthReading>;
  close(): Promise<void>;
}

/** Active jobs inspected per read to attribute them to pods; beyond it pods count as busy-unknown. */
const ACTIVE_SCAN_LIMIT = 2000;

export function createDepthReader(redis: Redis): DepthReader {
  const queues = new Map<SandboxMode, Queue>();
  const queueFor = (mode: SandboxMode) => {
    let q = queues.get(mode);
    if (!q) {
      q = new Queue(runQueueName(mode), { connection: redis, prefix: QUEUE_PREFIX });
      queues.set(mode, q);
    }
    return q;
  };
  return {
    async read(mode) {
      const q = queueFor(mode);
      const [counts, paused, active] = await Promise.all([
        q.getJobCounts('waiting', 'prioritized', 'active', 'delayed'),
        redis.zcard(pausedRunsKey(mode)),
        q.getJobs(['active'], 0, ACTIVE_SCAN_LIMIT - 1),
      ]);
      const activeByPod = new Map<string, number>();
      for (const job of active) {
        if (job?.processedBy) activeByPod.set(job.processedBy, (activeByPod.get(job.processedBy) ?? 0) + 1);
      }
      return {
        depth: {
          waiting: counts.waiting ?? 0,
          prioritized: counts.prioritized ?? 0,
          active: counts.active ?? 0,
          delayed: counts.delayed ?? 0,
          paused,
        },
        activeByPod,
      };
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
      queues.clear();
    },
  };
}
