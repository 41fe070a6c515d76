import type { FastifyPluginAsync } from 'fastify';
import type { RouteContext } from './context.ts';

/** Prometheus exposition; on the metrics port when ISLET_METRICS_PORT is set. */
export function metricsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { deps } = ctx;
  return async (app) => {
    app.get('/metrics', async (_request, reply) =>
      reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics()),
    );
  };
}
