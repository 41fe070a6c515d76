/**
 * The default metrics' event-loop lag monitor samples every EVENT_LOOP_SAMPLE_MS, not prom-client's
 * 10 ms (a timer that woke every process 100 times a second), and its metrics keep their names.
 */
import perfHooks from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMetrics, EVENT_LOOP_SAMPLE_MS } from './metrics.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the event-loop lag monitor', () => {
  it('samples at EVENT_LOOP_SAMPLE_MS, and the lag metrics are still exported', async () => {
    const monitor = vi.spyOn(perfHooks, 'monitorEventLoopDelay');
    const metrics = createMetrics({ component: 'test' });
    expect(monitor).toHaveBeenCalledTimes(1);
    expect(monitor).toHaveBeenCalledWith({ resolution: EVENT_LOOP_SAMPLE_MS });
    const text = await metrics.registry.metrics();
    for (const name of ['lag_seconds', 'lag_min_seconds', 'lag_max_seconds', 'lag_p99_seconds'])
      expect(text).toContain(`islet_nodejs_eventloop_${name}{`);
    // Its timer is the test's to stop (prom-client keeps it for the process's life).
    monitor.mock.results[0]?.value?.disable();
  });
});
