import { describe, expect, it, vi } from 'vitest';
import {
  counterSeries,
  counterSeriesByLabels,
  histogramSeries,
  histogramSeriesByLabels,
} from './metric-series.ts';
import { createMetrics } from './metrics.ts';

// (route, method, code, seconds): repeats, a value on a bucket's bound, one above the last bound, 0.
const responses: Array<[string, string, string, number]> = [
  ['/v1/runs', 'POST', '200', 0.0042],
  ['/v1/runs', 'POST', '200', 0.005],
  ['/v1/runs', 'POST', '202', 0.7],
  ['/v1/code-runs/:id', 'GET', '200', 0.0011],
  ['/v1/runs', 'POST', '200', 1234.5],
  ['unmatched', 'GET', '404', 0],
  ['/v1/runs', 'POST', '200', 0.0123],
  ['/v1/code-runs/:id', 'GET', '404', 0.02],
];

describe('counterSeries / histogramSeries', () => {
  it('scrape exactly as inc/observe with the labels would, also across a reset, calling prom-client once a series', async () => {
    const slow = createMetrics({ component: 'gateway', defaults: false });
    const fast = createMetrics({ component: 'gateway', defaults: false });
    const handles = new Map<string, { count: () => void; observe: (s: number) => void }>();
    const record = ([route, method, code, s]: [string, string, string, number]) => {
      slow.httpRequests.inc({ route, method, code });
      slow.httpDuration.observe({ route, method }, s);
      const key = `${route} ${method} ${code}`;
      let h = handles.get(key);
      if (!h) {
        h = {
          count: counterSeries(fast.httpRequests, { route, method, code }),
          observe: histogramSeries(fast.httpDuration, { route, method }),
        };
        handles.set(key, h);
      }
      h.count();
      h.observe(s);
    };
    const inc = vi.spyOn(fast.httpRequests, 'inc');
    const observe = vi.spyOn(fast.httpDuration, 'observe');
    for (let round = 0; round < 3; round++) for (const r of responses) record(r);
    // prom-client was called once a handle (its first value); the rest was recorded directly.
    expect(inc).toHaveBeenCalledTimes(5);
    expect(observe).toHaveBeenCalledTimes(5);
    expect(await fast.registry.metrics()).toBe(await slow.registry.metrics());
    expect(await fast.registry.metrics()).toContain(
      'islet_http_requests_total{route="/v1/runs",method="POST",code="200",component="gateway"} 12',
    );

    // A reset (tests, registry.resetMetrics) empties prom-client's store: the series come back.
    slow.registry.resetMetrics();
    fast.registry.resetMetrics();
    for (const r of responses.slice(0, 3)) record(r);
    expect(await fast.registry.metrics()).toBe(await slow.registry.metrics());

    // A value prom-client refuses is refused the same way.
    const h = histogramSeries(fast.httpDuration, { route: '/v1/runs', method: 'POST' });
    expect(() => h(Number.NaN)).toThrow(TypeError);
    expect(() => slow.httpDuration.observe({ route: '/v1/runs', method: 'POST' }, Number.NaN)).toThrow(
      TypeError,
    );
    // A caller recording through prom-client meets the same series.
    fast.httpRequests.inc({ route: '/v1/runs', method: 'POST', code: '200' });
    slow.httpRequests.inc({ route: '/v1/runs', method: 'POST', code: '200' });
    record(['/v1/runs', 'POST', '200', 0.3]);
    expect(await fast.registry.metrics()).toBe(await slow.registry.metrics());
  });

  it('a counter series by a value scrapes as inc(labels, value) would; one prom-client refuses is refused the same', async () => {
    const slow = createMetrics({ component: 'runner', defaults: false });
    const fast = createMetrics({ component: 'runner', defaults: false });
    const seconds = counterSeries(fast.tenantRunSeconds, { tenant: 'other' });
    const inc = vi.spyOn(fast.tenantRunSeconds, 'inc');
    for (const v of [0.25, 0, 1.5, 3, 0.125]) {
      slow.tenantRunSeconds.inc({ tenant: 'other' }, v);
      seconds(v);
    }
    expect(inc).toHaveBeenCalledTimes(1);
    expect(await fast.registry.metrics()).toBe(await slow.registry.metrics());
    expect(await fast.registry.metrics()).toContain(
      'islet_tenant_run_seconds_total{tenant="other",component="runner"} 4.875',
    );
    expect(() => seconds(-1)).toThrow('It is not possible to decrease a counter');
    expect(() => slow.tenantRunSeconds.inc({ tenant: 'other' }, -1)).toThrow(
      'It is not possible to decrease a counter',
    );
    expect(() => seconds(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(await fast.registry.metrics()).toBe(await slow.registry.metrics());
  });

  it('by labels: one handle a label set met, whatever the order of calls; the scrape is inc/observe’s', async () => {
    const slow = createMetrics({ component: 'gateway', defaults: false });
    const fast = createMetrics({ component: 'gateway', defaults: false });
    const count = counterSeriesByLabels(fast.httpRequests);
    const observe = histogramSeriesByLabels(fast.httpDuration);
    const inc = vi.spyOn(fast.httpRequests, 'inc');
    const observed = vi.spyOn(fast.httpDuration, 'observe');
    for (let round = 0; round < 3; round++)
      for (const [route, method, code, s] of responses) {
        slow.httpRequests.inc({ route, method, code });
        slow.httpDuration.observe({ route, method }, s);
        count({ route, method, code });
        observe({ route, method }, s);
      }
    // Five (route, method, code) sets and three (route, method) ones among the responses.
    expect(inc).toHaveBeenCalledTimes(5);
    expect(observed).toHaveBeenCalledTimes(3);
    expect(await fast.registry.metrics()).toBe(await slow.registry.metrics());
    // A value by labels: added to its series.
    const seconds = counterSeriesByLabels(fast.tenantRunSeconds);
    seconds({ tenant: 'other' }, 0.5);
    seconds({ tenant: 'other' }, 0.25);
    expect(await fast.registry.metrics()).toContain(
      'islet_tenant_run_seconds_total{tenant="other",component="gateway"} 0.75',
    );
  });
});
