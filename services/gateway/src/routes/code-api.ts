import { RUN_STYLES } from '@islet/runs';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { callerOf } from '../auth.ts';
import { declareBindings } from '../code-api.ts';
import { validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';

export function codeApiRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  return async (app) => {
    app.get('/v1/code-api', { preHandler: auth.requireScopes('apps.use') }, async (request, reply) => {
      const q = z
        .object({
          q: z.string().max(500).optional(),
          connection: z.string().max(200).optional(),
          /** Whose bindings: a run_code run's (Apps + files.*, default) or a Code Mode run's (Apps). */
          style: z.enum(RUN_STYLES).optional(),
        })
        .safeParse(request.query);
      if (!q.success) throw validationProblem(q.error, 'query.');
      const all = await deps.connections.list(callerOf(request).tenantId);
      const filter: Parameters<typeof declareBindings>[1] = {};
      if (q.data.style) filter.style = q.data.style;
      if (q.data.q) filter.q = q.data.q;
      if (q.data.connection) filter.connection = q.data.connection;
      const out = declareBindings(all, filter);
      if (String(request.headers.accept ?? '').includes('application/typescript'))
        return reply.type('application/typescript; charset=utf-8').send(out.declarations);
      return out;
    });
  };
}
