// The gateway's scrape-time Redis reads against a real redis-server and real BullMQ queues: the
// oldest waiting job's age per mode (a mode with no runner is no longer silent), Redis memory,
// reachability and PING time, build info, and staleness: while Redis is down the depth/age/memory series disappear from the
// scrape (Prometheus marks them stale) instead of repeating the last value, and the scrape asks the down connection nothing.

import { createMetrics, createRedis, type Redis, redisPinger } from '@islet/core';
import { QUEUE_PREFIX, runQueueName, SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import type { RunJobData } from '@islet/runs';
import { type RedisServer, startRedis } from '@islet/testkit';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queueMetricsCollectors } from './queue-metrics-store.ts';

const MAXMEMORY = 64 * 1024 * 1024;
let server: RedisServer;
let redis: Redis;
let queues: Record<SandboxMode, Queue<RunJobData>>;
let metrics: ReturnType<typeof createMetrics>;

const series = (text: string, name: string) =>
  text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
const value = (line: string | undefined) => Number(line?.split(' ').at(-1));

beforeAll(async () => {
  server = await startRedis({ appendOnly: true, maxMemoryBytes: MAXMEMORY });
  redis = createRedis(server.url);
  redis.on('error', () => {});
  queues = Object.fromEntries(
    SANDBOX_MODES.map((mode) => [
      mode,
      new Queue<RunJobData>(runQueueName(mode), { connection: redis, prefix: QUEUE_PREFIX }),
    ]),
  ) as Record<SandboxMode, Queue<RunJobData>>;
  for (const q of Object.values(queues)) q.on('error', () => {});
  metrics = createMetrics({
    component: 'gateway',
    defaults: false,
    ...queueMetricsCollectors(redis, queues),
    pingRedis: redisPinger(redis),
  });
});

afterAll(async () => {
  await Promise.all(Object.values(queues ?? {}).map((q) => q.close()));
  redis?.disconnect();
  await server?.stop();
});

describe('gateway queue metrics', () => {
  it('exports the oldest waiting job age per mode, 0 for an empty queue', async () => {
    const q = queues['read-only'];
    const data = {} as RunJobData;
    const addedFrom = Date.now();
    await q.add('run', data, { timestamp: Date.now() - 300_000 });
    await q.add('run', data);
    await q.add('run', data, { priority: 5, timestamp: Date.now() - 30_000 });
    const text = await metrics.registry.metrics();
    const scrapedBy = Date.now();
    const age = series(text, 'islet_queue_oldest_job_age_seconds');
    const ro = age.find((l) => l.includes('mode="read-only"'));
    // The oldest job's age, bracketed by the clock around its add and the scrape (however slow).
    expect(value(ro)).toBeGreaterThanOrEqual(300);
    expect(value(ro)).toBeLessThanOrEqual(300 + (scrapedBy - addedFrom) / 1000);
    for (const mode of SANDBOX_MODES.filter((m) => m !== 'read-only'))
      expect(value(age.find((l) => l.includes(`mode="${mode}"`))), mode).toBe(0);
    expect(
      value(series(text, 'islet_queue_depth').find((l) => l.includes('mode="read-only",state="waiting"'))),
    ).toBe(2);
  });

  it('exports Redis used memory, maxmemory, reachability and PING time, and build info', async () => {
    const text = await metrics.registry.metrics();
    expect(value(series(text, 'islet_redis_maxmemory_bytes')[0])).toBe(MAXMEMORY);
    const used = value(series(text, 'islet_redis_used_memory_bytes')[0]);
    expect(used).toBeGreaterThan(100_000);
    expect(used).toBeLessThan(MAXMEMORY);
    expect(value(series(text, 'islet_redis_up')[0])).toBe(1);
    const ping = value(series(text, 'islet_redis_ping_seconds')[0]);
    expect(ping).toBeGreaterThan(0);
    expect(ping).toBeLessThan(1);
    expect(text).toMatch(
      new RegExp(
        `^islet_build_info\\{version="[^"]+",revision="[^"]+",node="${process.version}",component="gateway"\\} 1$`,
        'm',
      ),
    );
  });

  it('drops depth, age, memory and PING series while Redis is down (stale, not last value), up 0; back after', async () => {
    await server.kill();
    const deadline = Date.now() + 10_000;
    while (redis.status === 'ready' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    // The scrape asks the down connection nothing (a command would wait in its offline queue, and
    // the scrape with it, until Redis came back: it comes back only after this scrape).
    const sent = vi.spyOn(redis, 'sendCommand');
    const text = await metrics.registry.metrics();
    expect(sent).not.toHaveBeenCalled();
    sent.mockRestore();
    expect(series(text, 'islet_queue_depth')).toEqual([]);
    expect(series(text, 'islet_queue_oldest_job_age_seconds')).toEqual([]);
    expect(series(text, 'islet_redis_used_memory_bytes')).toEqual([]);
    expect(series(text, 'islet_redis_maxmemory_bytes')).toEqual([]);
    // Reachability is the one Redis series that stays, and says so.
    expect(series(text, 'islet_redis_up')).toEqual(['islet_redis_up{component="gateway"} 0']);
    expect(series(text, 'islet_redis_ping_seconds')).toEqual([]);
    expect(text).toContain('islet_build_info{');

    await server.restart();
    let back: string[] = [];
    while (Date.now() < deadline + 20_000) {
      back = series(await metrics.registry.metrics(), 'islet_queue_depth');
      if (back.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(value(series(await metrics.registry.metrics(), 'islet_redis_up')[0])).toBe(1);
    // The AOF kept the jobs: the depth is read again, not remembered.
    expect(value(back.find((l) => l.includes('mode="read-only",state="waiting"')))).toBe(2);
  });
});
