/**
 * A run's own metrics, recorded into their series directly (core's metric-series.ts): the queue
 * wait, the duration, the ended count and the tenant usage, up to eight updates a run. prom-client's
 * `inc`/`observe` check the label names and build the series' key each call: ~50 µs a run self time
 * on a loaded runner's main thread (test/bench/README.md, round 30 `runner-cpu`). The labels are
 * bounded (modes, statuses, failure kinds, metered tenants or `other`), so the series' handles are too.
 */
import { counterSeriesByLabels, histogramSeriesByLabels, type Metrics, meteredTenant } from '@islet/core';

export function createRunMetrics(metrics: Metrics, meteredTenants: readonly string[] = []) {
  const queueWait = histogramSeriesByLabels(metrics.queueWait);
  const duration = histogramSeriesByLabels(metrics.runDuration);
  const ended = counterSeriesByLabels(metrics.runsTotal);
  const tenantRuns = counterSeriesByLabels(metrics.tenantRuns);
  const tenantSeconds = counterSeriesByLabels(metrics.tenantRunSeconds);
  const tenantCalls = counterSeriesByLabels(metrics.tenantBindingCalls);
  const tenantBytes = counterSeriesByLabels(metrics.tenantOutputBytes);
  const tenantCpu = counterSeriesByLabels(metrics.tenantSandboxCpuSeconds);
  return {
    queueWait(mode: string, seconds: number): void {
      queueWait({ mode }, seconds);
    },
    duration(mode: string, status: string, kind: string, seconds: number): void {
      duration({ mode, status, kind }, seconds);
    },
    ended(status: string, kind: string, mode: string): void {
      ended({ status, kind, mode });
    },
    /** An ended run in the tenant usage metrics (bounded: see core's meteredTenant). */
    usage(
      tenantId: string,
      status: string,
      use: { seconds: number; bindingCalls: number; outputBytes: number; cpuSeconds: number },
    ): void {
      const tenant = meteredTenant(meteredTenants, tenantId);
      tenantRuns({ tenant, status });
      tenantSeconds({ tenant }, use.seconds);
      if (use.bindingCalls > 0) tenantCalls({ tenant }, use.bindingCalls);
      tenantBytes({ tenant }, use.outputBytes);
      if (use.cpuSeconds > 0) tenantCpu({ tenant }, use.cpuSeconds);
    },
  };
}
