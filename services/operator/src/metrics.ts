/** The operator's Prometheus metrics (names fixed in helpers' INTERFACES: islet_operator_*). */
import { createServer, type Server } from 'node:http';
import { buildInfoLabels } from '@islet/core';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';

/** prom-client default gauges whose names end in `_total` although they are not counters. */
const NON_COUNTER_TOTALS = [
  'islet_nodejs_active_handles_total',
  'islet_nodejs_active_requests_total',
  'islet_nodejs_active_resources_total',
];

export type ReconcileResult =
  | 'ok'
  | 'error'
  | 'conflict'
  | 'invalid-spec'
  | 'depth-unavailable'
  | 'not-owned';

export interface OperatorMetrics {
  registry: Registry;
  reconcileTotal: Counter<'result'>;
  desiredReplicas: Gauge<'pool'>;
  maxReplicas: Gauge<'pool' | 'mode'>;
  scaleEventsTotal: Counter<'pool' | 'direction'>;
  watchRestartsTotal: Counter<'resource' | 'reason'>;
  leader: Gauge;
  /** 1 per pool that is Stalled, with the reason (InvalidSpec, DeploymentNotOwned, the API's reason…). */
  poolStalled: Gauge<'pool' | 'reason'>;
}

export function createOperatorMetrics(options: { defaults?: boolean } = {}): OperatorMetrics {
  const registry = new Registry();
  if (options.defaults !== false) {
    collectDefaultMetrics({ register: registry, prefix: 'islet_' });
    // prom-client names three gauges `..._total`, which Prometheus reserves for counters
    // (promtool check metrics rejects them): leave them out.
    for (const name of NON_COUNTER_TOTALS) registry.removeSingleMetric(name);
  }
  new Gauge({
    name: 'islet_build_info',
    help: 'Always 1; the labels say which build runs where',
    labelNames: ['version', 'revision', 'node'],
    registers: [registry],
  }).set(buildInfoLabels(), 1);
  return {
    registry,
    maxReplicas: new Gauge({
      name: 'islet_operator_max_replicas',
      help: 'maxReplicas of each RunnerPool, with its mode (to join with queue metrics).',
      labelNames: ['pool', 'mode'],
      registers: [registry],
    }),
    reconcileTotal: new Counter({
      name: 'islet_operator_reconcile_total',
      help: 'RunnerPool reconciles by result.',
      labelNames: ['result'],
      registers: [registry],
    }),
    desiredReplicas: new Gauge({
      name: 'islet_operator_desired_replicas',
      help: 'Replicas the operator wants for each RunnerPool.',
      labelNames: ['pool'],
      registers: [registry],
    }),
    scaleEventsTotal: new Counter({
      name: 'islet_operator_scale_events_total',
      help: 'Replica changes made by the operator, by pool and direction (up|down).',
      labelNames: ['pool', 'direction'],
      registers: [registry],
    }),
    watchRestartsTotal: new Counter({
      name: 'islet_operator_watch_restarts_total',
      help: 'Watch streams re-established, by resource and reason (closed|error|expired).',
      labelNames: ['resource', 'reason'],
      registers: [registry],
    }),
    poolStalled: new Gauge({
      name: 'islet_operator_pool_stalled',
      help: '1 while a RunnerPool is Stalled (it cannot follow its queue), labelled with the reason.',
      labelNames: ['pool', 'reason'],
      registers: [registry],
    }),
    leader: new Gauge({
      name: 'islet_operator_leader',
      help: '1 while this operator replica holds the leader Lease.',
      registers: [registry],
    }),
  };
}

/** /metrics, /healthz (process up) and /readyz (API server and Redis answer; leader or standby). */
export function startMetricsServer(
  metrics: OperatorMetrics,
  port: number,
  host: string,
  ready: () => Promise<{ ok: boolean; checks: Record<string, string> }>,
): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      metrics.registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(body);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
      return;
    }
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (req.url === '/readyz') {
      ready().then(
        (r) => {
          const lines = Object.entries(r.checks).map(([k, v]) => `${k}: ${v}`);
          res
            .writeHead(r.ok ? 200 : 503, { 'content-type': 'text/plain' })
            .end(`${r.ok ? 'ready' : 'not ready'}\n${lines.join('\n')}\n`);
        },
        (err: unknown) => {
          res.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready\n${String(err)}\n`);
        },
      );
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
