import type { FastifyPluginAsync } from 'fastify';
import { openApiDocument } from '../openapi.ts';
import type { RouteContext } from './context.ts';

export function healthRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { deps } = ctx;
  // Built on first request, when every route has been registered.
  let doc: ReturnType<typeof openApiDocument> | undefined;
  return async (app) => {
    app.get('/healthz', async () => ({ status: 'ok' }));
    app.get('/readyz', async (_request, reply) => {
      try {
        // Commands queue while Redis is away; answer not-ready at once instead of hanging the probe.
        if (deps.redis.status !== 'ready') throw new Error(`redis ${deps.redis.status}`);
        await deps.redis.ping();
        return { status: 'ready' };
      } catch {
        return reply.code(503).type('application/problem+json').send({
          type: 'https://islet.dev/problems/unavailable',
          title: 'The service is not available',
          status: 503,
          detail: 'Redis is not reachable',
          code: 'unavailable',
        });
      }
    });
    app.get('/openapi.json', async () => {
      doc ??= openApiDocument(ctx.routes?.routes ?? []);
      return doc;
    });
  };
}
