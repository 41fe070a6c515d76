/**
 * A run's own metrics, recorded into their series directly (core's metric-series.ts): the queue
 * wait, the duration, the ended count and the tenant usage, up to eight updates a run. prom-client's
 * `inc`/`observe` check the label names and build the series' key each call: ~50 µs a run self time
 * on a loaded runner's main thread (test/bench/README.md, round 30 `runner-cpu`). The labels are
 * bounded (modes, statuses, failure kinds, metered tenants or `other`), so the series' handles are too.
 *
 * The handles are found by their label values one `Map` level a value, not by the values joined
 * (core's `counterSeriesByLabels`): each update made a labels object, its values' array and their
 * joined text, and hashed that fresh text, ~8 times a run (test/bench/README.md, round 40
 * `runner-alloc`). The values here are the callers' own strings (a mode, a status, a kind, a tenant),
 * whose hashes V8 keeps.
 */
import { counterSeries, histogramSeries, type Metrics, meteredTenant } from '@islet/core';

/** A handle for each value met, made at its first use and kept (the values are bounded). */
function byValue<H>(make: (value: string) => H): (value: string) => H {
  const handles = new Map<string, H>();
  return (value) => {
    let handle = handles.get(value);
    if (handle === undefined) {
      handle = make(value);
      handles.set(value, handle);
    }
    return handle;
  };
}

export function createRunMetrics(metrics: Metrics, meteredTenants: readonly string[] = []) {
  const queueWait = byValue((mode) => histogramSeries(metrics.queueWait, { mode }));
  const duration = byValue((mode) =>
    byValue((status) => byValue((kind) => histogramSeries(metrics.runDuration, { mode, status, kind }))),
  );
  const ended = byValue((status) =>
    byValue((kind) => byValue((mode) => counterSeries(metrics.runsTotal, { status, kind, mode }))),
  );
  /** A metered tenant's (or `other`'s) usage series; its runs' by status. */
  const tenantSeries = byValue((tenant) => ({
    runs: byValue((status) => counterSeries(metrics.tenantRuns, { tenant, status })),
    seconds: counterSeries(metrics.tenantRunSeconds, { tenant }),
    calls: counterSeries(metrics.tenantBindingCalls, { tenant }),
    bytes: counterSeries(metrics.tenantOutputBytes, { tenant }),
    cpu: counterSeries(metrics.tenantSandboxCpuSeconds, { tenant }),
  }));
  return {
    queueWait(mode: string, seconds: number): void {
      queueWait(mode)(seconds);
    },
    duration(mode: string, status: string, kind: string, seconds: number): void {
      duration(mode)(status)(kind)(seconds);
    },
    ended(status: string, kind: string, mode: string): void {
      ended(status)(kind)(mode)();
    },
    /** An ended run in the tenant usage metrics (bounded: see core's meteredTenant). */
    usage(
      tenantId: string,
      status: string,
      use: { seconds: number; bindingCalls: number; outputBytes: number; cpuSeconds: number },
    ): void {
      const series = tenantSeries(meteredTenant(meteredTenants, tenantId));
      series.runs(status)();
      series.seconds(use.seconds);
      if (use.bindingCalls > 0) series.calls(use.bindingCalls);
      series.bytes(use.outputBytes);
      if (use.cpuSeconds > 0) series.cpu(use.cpuSeconds);
    },
  };
}
