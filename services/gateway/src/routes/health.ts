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
        await deps.redisProbe.ping();
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
