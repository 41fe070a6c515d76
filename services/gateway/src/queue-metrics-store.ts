/**
 * The gateway's scrape-time reads of Redis for /metrics: queue depth, the oldest waiting job's age
 * and Redis memory. A read that fails or does not answer within READ_TIMEOUT_MS sets nothing: the
 * gauges are emptied before each collect, so Prometheus sees the series go stale instead of the
 * last value repeated while Redis is down (and the scrape itself still succeeds, quickly: the
 * connection queues commands while disconnected, which would otherwise hang the scrape).
 */

import { type MetricsOptions, type Redis, redisNodes } from '@islet/core';
import { SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import type { RunJobData } from '@islet/runs';
import type { Queue } from 'bullmq';

const READ_TIMEOUT_MS = 1000;

async function read<T>(redis: Redis, fn: () => Promise<T>): Promise<T | undefined> {
  if (redis.status !== 'ready') return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), READ_TIMEOUT_MS);
      }),
    ]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** `field:123` from an INFO section. */
function infoNumber(info: string, field: string): number {
  return Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
}

export function queueMetricsCollectors(
  redis: Redis,
  queues: Record<SandboxMode, Queue<RunJobData>>,
  now: () => number = Date.now,
): Pick<MetricsOptions, 'collectQueueDepth' | 'collectQueueAge' | 'readRedisMemory'> {
  return {
    async collectQueueDepth(set) {
      for (const mode of SANDBOX_MODES) {
        const counts = await read(redis, () =>
          queues[mode].getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'paused'),
        );
        if (counts) for (const [state, n] of Object.entries(counts)) set({ mode, state }, n);
      }
    },
    async collectQueueAge(set) {
      for (const mode of SANDBOX_MODES) {
        // asc: the head of the waiting list and of the prioritized set, the jobs waiting longest.
        const heads = await read(redis, () => queues[mode].getJobs(['waiting', 'prioritized'], 0, 0, true));
        if (!heads) continue;
        const stamps = heads.map((j) => j?.timestamp).filter((t): t is number => typeof t === 'number');
        set({ mode }, stamps.length ? Math.max(0, (now() - Math.min(...stamps)) / 1000) : 0);
      }
    },
    async readRedisMemory() {
      // A cluster fills up node by node (noeviction refuses writes on the full one): report the
      // master closest to its limit (the largest, when none has one), not a sum that hides it.
      const infos = await read(redis, async () =>
        Promise.all((await redisNodes(redis)).map((node) => node.info('memory'))),
      );
      if (infos === undefined) return undefined;
      let fullest: { used: number; max: number } | undefined;
      for (const info of infos) {
        const used = infoNumber(info, 'used_memory');
        const max = infoNumber(info, 'maxmemory');
        if (!Number.isFinite(used) || !Number.isFinite(max)) return undefined;
        const fill = (m: { used: number; max: number }) => (m.max > 0 ? m.used / m.max : 0);
        if (
          !fullest ||
          fill({ used, max }) > fill(fullest) ||
          (fill({ used, max }) === fill(fullest) && used > fullest.used)
        )
          fullest = { used, max };
      }
      return fullest;
    },
  };
}
