/**
 * The slot gauges follow the gate through jobs taken and ended: `islet_runner_slots` busy/idle and
 * `islet_runner_parked_runs` read right at every step, read from the gates when scraped: no gauge
 * is set by a job's take or end (round 28). Real runner, real redis-server, an executor held by the test.
 */
import { createLogger, createMetrics } from '@islet/core';
import { describe, expect, it } from 'vitest';
import { until } from '../test/runner-harness.ts';
import { addRun, runnerServer } from '../test/runner-server.ts';
import { createRunner } from './runner.ts';

const server = runnerServer();

describe('runner: slot gauges', () => {
  it('busy, idle and parked counts follow jobs taken and ended', async () => {
    const config = server.config({
      ISLET_RUNNER_CONCURRENCY: '3',
    });
    const metrics = createMetrics({ component: 'runner-slot-metrics-test', defaults: false });
    // Gauge sets made outside a scrape (a job's take or end setting them as it goes).
    let scraping = false;
    let setsOutsideScrape = 0;
    for (const g of [metrics.runnerSlots, metrics.parkedRuns]) {
      const set = g.set.bind(g) as (...a: unknown[]) => void;
      (g as unknown as { set: (...a: unknown[]) => void }).set = (...a) => {
        if (!scraping) setsOutsideScrape++;
        set(...a);
      };
    }
    const gauge = async (name: string) => {
      const values: Record<string, number> = {};
      scraping = true;
      try {
        for (const v of (await metrics.registry.getSingleMetric(name)?.get())?.values ?? [])
          values[String(v.labels.state ?? v.labels.isolate)] = v.value;
      } finally {
        scraping = false;
      }
      return values;
    };
    const held = new Map<string, () => void>();
    const runner = createRunner({
      config,
      executor: {
        execute: (job) =>
          new Promise((resolve) => {
            held.set(job.runId, () => resolve('completed'));
          }),
        giveUp: async () => undefined,
        head: async () => null,
      },
      metrics,
      logger: createLogger({ name: 'runner-slot-metrics-test', level: 'silent' }),
    });
    const queue = server.queue();
    let closed = false;
    try {
      await runner.start();
      for (const id of ['g1', 'g2']) await addRun(queue, id);
      await until('both jobs to run', () => held.size === 2);
      expect(await gauge('islet_runner_slots')).toEqual({ busy: 2, idle: 1 });
      expect(await gauge('islet_runner_parked_runs')).toEqual({ kept: 0, released: 0 });
      held.get('g1')?.();
      await until('one job to complete', async () => (await queue.getCompletedCount()) === 1);
      await until('the gauge to follow', async () => (await gauge('islet_runner_slots')).busy === 1);
      expect(await gauge('islet_runner_slots')).toEqual({ busy: 1, idle: 2 });
      held.get('g2')?.();
      await until('both jobs to complete', async () => (await queue.getCompletedCount()) === 2);
      await until('the gauge to follow', async () => (await gauge('islet_runner_slots')).busy === 0);
      expect(await gauge('islet_runner_slots')).toEqual({ busy: 0, idle: 3 });
      expect(await gauge('islet_runner_parked_runs')).toEqual({ kept: 0, released: 0 });
      // Two jobs taken and ended, and not one gauge set for them: the scrapes read the gates.
      expect(setsOutsideScrape).toBe(0);
      await runner.close(5000);
      closed = true;
    } finally {
      for (const free of held.values()) free();
      if (!closed) await runner.close(1000).catch(() => undefined);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
  });
});
