/**
 * A run's own metrics, recorded into their series directly (core's metric-series.ts): the queue
 * wait, the duration, the ended count and the tenant usage, up to eight updates a run. prom-client's
 * `inc`/`observe` check the label names and build the series' key each call: ~50 µs a run self time
 * on a loaded runner's main thread (test/bench/README.md, round 30 `runner-cpu`). A series' handle
 * is found once by its labels and kept; the labels are bounded (modes, statuses, failure kinds,
 * metered tenants or `other`), so the handles are too.
 */
import { counterSeries, histogramSeries, type Metrics, meteredTenant } from '@islet/core';

type Record1 = (value: number) => void;

export function createRunMetrics(metrics: Metrics, meteredTenants: readonly string[] = []) {
  const handles = new Map<string, Record1>();
  const handle = (key: string, make: () => Record1): Record1 => {
    let h = handles.get(key);
    if (!h) {
      h = make();
      handles.set(key, h);
    }
    return h;
  };
  return {
    queueWait(mode: string, seconds: number): void {
      handle(`wait\u0000${mode}`, () => histogramSeries(metrics.queueWait, { mode }))(seconds);
    },
    duration(mode: string, status: string, kind: string, seconds: number): void {
      handle(`duration\u0000${mode}\u0000${status}\u0000${kind}`, () =>
        histogramSeries(metrics.runDuration, { mode, status, kind }),
      )(seconds);
    },
    ended(status: string, kind: string, mode: string): void {
      handle(`ended\u0000${status}\u0000${kind}\u0000${mode}`, () =>
        counterSeries(metrics.runsTotal, { status, kind, mode }),
      )(1);
    },
    /** An ended run in the tenant usage metrics (bounded: see core's meteredTenant). */
    usage(
      tenantId: string,
      status: string,
      use: { seconds: number; bindingCalls: number; outputBytes: number; cpuSeconds: number },
    ): void {
      const tenant = meteredTenant(meteredTenants, tenantId);
      handle(`runs\u0000${tenant}\u0000${status}`, () =>
        counterSeries(metrics.tenantRuns, { tenant, status }),
      )(1);
      handle(`seconds\u0000${tenant}`, () => counterSeries(metrics.tenantRunSeconds, { tenant }))(
        use.seconds,
      );
      if (use.bindingCalls > 0)
        handle(`calls\u0000${tenant}`, () => counterSeries(metrics.tenantBindingCalls, { tenant }))(
          use.bindingCalls,
        );
      handle(`bytes\u0000${tenant}`, () => counterSeries(metrics.tenantOutputBytes, { tenant }))(
        use.outputBytes,
      );
      if (use.cpuSeconds > 0)
        handle(`cpu\u0000${tenant}`, () => counterSeries(metrics.tenantSandboxCpuSeconds, { tenant }))(
          use.cpuSeconds,
        );
    },
  };
}
