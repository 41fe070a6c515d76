/**
 * A run's metrics (run-metrics.ts) expose what prom-client's own `inc`/`observe` with the same labels
 * would, byte for byte, and find their series without joining label values (no `Object.values`, no
 * `Array.prototype.join` an update once each series was met). Counted over the two builtins.
 */
import { createMetrics } from '@islet/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRunMetrics } from './run-metrics.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

/** The same updates, through `createRunMetrics` and through prom-client directly. */
function record(ours: ReturnType<typeof createRunMetrics>, n: number) {
  for (let i = 0; i < n; i++) {
    const mode = i % 2 ? 'read-only' : 'read-write';
    const status = i % 3 ? 'Completed' : 'Failed';
    ours.queueWait(mode, i / 100);
    ours.duration(mode, status, i % 3 ? 'none' : 'timeout', i / 50);
    ours.ended(status, i % 3 ? 'none' : 'timeout', mode);
    ours.usage(i % 4 ? 'acme' : 'zeta', status, {
      seconds: i / 10,
      bindingCalls: i % 2,
      outputBytes: i,
      cpuSeconds: (i % 3) / 1000,
    });
  }
}

function recordDirect(m: ReturnType<typeof createMetrics>, metered: readonly string[], n: number) {
  for (let i = 0; i < n; i++) {
    const mode = i % 2 ? 'read-only' : 'read-write';
    const status = i % 3 ? 'Completed' : 'Failed';
    const kind = i % 3 ? 'none' : 'timeout';
    const tenant = metered.includes(i % 4 ? 'acme' : 'zeta') ? (i % 4 ? 'acme' : 'zeta') : 'other';
    m.queueWait.observe({ mode }, i / 100);
    m.runDuration.observe({ mode, status, kind }, i / 50);
    m.runsTotal.inc({ status, kind, mode });
    m.tenantRuns.inc({ tenant, status });
    m.tenantRunSeconds.inc({ tenant }, i / 10);
    if (i % 2 > 0) m.tenantBindingCalls.inc({ tenant }, i % 2);
    m.tenantOutputBytes.inc({ tenant }, i);
    if (i % 3 > 0) m.tenantSandboxCpuSeconds.inc({ tenant }, (i % 3) / 1000);
  }
}

describe("a run's metrics", () => {
  it("expose what prom-client's own updates with the same labels do", async () => {
    const metered = ['acme'];
    const a = createMetrics({ component: 'run-metrics-test', defaults: false });
    const b = createMetrics({ component: 'run-metrics-test', defaults: false });
    record(createRunMetrics(a, metered), 60);
    recordDirect(b, metered, 60);
    const text = await a.registry.metrics();
    expect(text).toContain('islet_tenant_runs_total{tenant="other",status="Failed"');
    expect(text).toBe(await b.registry.metrics());
  });

  it('find their series without joining label values once each was met', () => {
    const ours = createRunMetrics(createMetrics({ component: 'run-metrics-test', defaults: false }), [
      'acme',
    ]);
    record(ours, 12);
    const values = vi.spyOn(Object, 'values');
    const join = vi.spyOn(Array.prototype, 'join');
    record(ours, 12);
    expect(values).not.toHaveBeenCalled();
    expect(join).not.toHaveBeenCalled();
  });
});
