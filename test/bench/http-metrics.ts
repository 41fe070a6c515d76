/**
 * `node test/bench/http-metrics.ts`: the gateway's per-response metrics (`onResponse`:
 * `islet_http_requests_total` + `islet_http_request_duration_seconds`), CPU µs a response, through
 * prom-client's `inc`/`observe` with the labels (round 28's gateway) against `httpRecorder`'s
 * series resolved once (round 29 `gw-cpu`), in alternating windows of `WINDOW` responses
 * (default 20,000; `ROUNDS`, default 5) on one process, the scrapes of both compared at the end.
 * A submit's response is one of a few series (route, method, code), as on a busy gateway.
 */
import { createMetrics } from '../../services/core/src/metrics.ts';
import { httpRecorder } from '../../services/gateway/src/app.ts';

const WINDOW = Number(process.env.WINDOW ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const routes: Array<[string, string, number]> = [
  ['/v1/runs', 'POST', 200],
  ['/v1/runs', 'POST', 202],
  ['/v1/code-runs/:id', 'GET', 200],
  ['/internal/runs/:id/calls', 'POST', 200],
];
const slow = createMetrics({ component: 'gateway', defaults: false });
const fast = createMetrics({ component: 'gateway', defaults: false });
const record = httpRecorder(fast);
const ways = {
  'prom-client inc/observe': (route: string, method: string, code: number, s: number) => {
    slow.httpRequests.inc({ route, method, code: String(code) });
    slow.httpDuration.observe({ route, method }, s);
  },
  'series resolved once': record,
};
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const results: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? Object.entries(ways) : Object.entries(ways).reverse();
  for (const [name, way] of order) {
    const t0 = cpu();
    for (let i = 0; i < WINDOW; i++) {
      const [route, method, code] = routes[i % 7 === 0 ? i % routes.length : 0] ?? routes[0]!;
      way(route, method, code, 0.002 + (i % 13) * 0.001);
    }
    const list = results[name] ?? [];
    list.push((cpu() - t0) / WINDOW);
    results[name] = list;
  }
}
for (const [name, r] of Object.entries(results))
  console.log(`${name.padEnd(26)} µs a response: ${r.map((x) => x.toFixed(3)).join(' ')}`);
const same = (await slow.registry.metrics()) === (await fast.registry.metrics());
console.log(`scrapes identical: ${same}`);
