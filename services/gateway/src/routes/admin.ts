/** Tenants and keys, for keys with `platform.admin` (the CLI `islet admin` does the same directly on Redis). */
import { PRINCIPAL, SCOPES } from '@islet/core';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { HttpProblem, validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

export const createTenantSchema = z
  .object({
    id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,62}$/)
      .optional(),
    name: z.string().min(1).max(200),
    rateLimitPerMinute: z.number().int().positive().optional(),
    maxInFlightRuns: z.number().int().positive().optional(),
  })
  .strict();

export const createKeySchema = z
  .object({
    scopes: z.array(z.enum(SCOPES)).min(1),
    /** Who the key belongs to; default: the key itself. Sessions belong to principals. */
    principal: z.string().regex(PRINCIPAL).optional(),
  })
  .strict();

export function adminRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  const admin = { preHandler: auth.requireScopes('platform.admin') };
  return async (app) => {
    app.post('/v1/admin/tenants', admin, async (request, reply) => {
      const parsed = createTenantSchema.safeParse(request.body);
      if (!parsed.success) throw validationProblem(parsed.error);
      if (parsed.data.id && (await deps.tenants.getTenant(parsed.data.id)))
        throw new HttpProblem('conflict', `tenant ${parsed.data.id} exists`);
      return reply.code(201).send(await deps.tenants.createTenant(parsed.data));
    });
    app.get('/v1/admin/tenants', admin, async () => ({ items: await deps.tenants.listTenants() }));
    app.post('/v1/admin/tenants/:id/keys', admin, async (request, reply) => {
      const { id } = idParams.parse(request.params);
      const parsed = createKeySchema.safeParse(request.body);
      if (!parsed.success) throw validationProblem(parsed.error);
      if (!(await deps.tenants.getTenant(id))) throw new HttpProblem('not-found', `no tenant ${id}`);
      const options = parsed.data.principal ? { principal: parsed.data.principal } : {};
      return reply.code(201).send(await deps.tenants.createKey(id, parsed.data.scopes, options));
    });
  };
}
