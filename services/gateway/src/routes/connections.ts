import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../auth.ts';
import { bindingsOf, connectionInputSchema } from '../connections.ts';
import { HttpProblem, validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

export function connectionsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  const view = (c: Awaited<ReturnType<typeof deps.connections.get>> & object) => ({
    ...c,
    bindings: bindingsOf(c).map((b) => `apps.${b.binding}`),
  });
  return async (app) => {
    app.post('/v1/connections', { preHandler: auth.requireScopes('apps.use') }, async (request, reply) => {
      const parsed = connectionInputSchema.safeParse(request.body);
      if (!parsed.success) throw validationProblem(parsed.error);
      const res = await deps.connections.create(callerOf(request).tenantId, parsed.data);
      if (!res.ok) throw new HttpProblem(res.code, res.detail);
      reply.header('location', `/v1/connections/${res.connection.id}`);
      return reply.code(201).send(view(res.connection));
    });
    app.get('/v1/connections', { preHandler: auth.requireScopes('apps.use') }, async (request) => {
      const items = await deps.connections.list(callerOf(request).tenantId);
      return { items: items.map(view) };
    });
    app.get('/v1/connections/:id', { preHandler: auth.requireScopes('apps.use') }, async (request) => {
      const { id } = idParams.parse(request.params);
      const c = await deps.connections.get(callerOf(request).tenantId, id);
      if (!c) throw new HttpProblem('not-found', `no connection ${id}`);
      return view(c);
    });
    app.delete(
      '/v1/connections/:id',
      { preHandler: auth.requireScopes('apps.use') },
      async (request, reply) => {
        const { id } = idParams.parse(request.params);
        if (!(await deps.connections.remove(callerOf(request).tenantId, id)))
          throw new HttpProblem('not-found', `no connection ${id}`);
        return reply.code(204).send();
      },
    );
  };
}
