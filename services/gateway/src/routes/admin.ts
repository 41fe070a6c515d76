/** Tenants and keys, for keys with `platform.admin` (the CLI `islet admin` does the same directly on Redis). */
import { PRINCIPAL, SCOPES } from '@islet/core';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { HttpProblem, validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

/** A rotation's grace lasts at most 30 days. */
const MAX_GRACE_SECONDS = 30 * 24 * 3600;
const keyParams = idParams.extend({ keyId: z.string().regex(/^key-[0-9a-f]{1,64}$/) });
const expiresAtSchema = z
  .union([z.number().int().positive(), z.iso.datetime({ offset: true }).transform((s) => Date.parse(s))])
  .refine((ms) => ms > Date.now(), 'expiresAt must be in the future');

export function adminRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  const admin = { preHandler: auth.requireScopes('platform.admin') };
  return async (app) => {
    app.post('/v1/admin/tenants', admin, async (request, reply) => {
      const parsed = z
        .object({
          id: z
            .string()
            .regex(/^[a-z0-9][a-z0-9-]{0,62}$/)
            .optional(),
          name: z.string().min(1).max(200),
          rateLimitPerMinute: z.number().int().positive().optional(),
          maxInFlightRuns: z.number().int().positive().optional(),
        })
        .strict()
        .safeParse(request.body);
      if (!parsed.success) throw validationProblem(parsed.error);
      if (parsed.data.id && (await deps.tenants.getTenant(parsed.data.id)))
        throw new HttpProblem('conflict', `tenant ${parsed.data.id} exists`);
      return reply.code(201).send(await deps.tenants.createTenant(parsed.data));
    });
    app.get('/v1/admin/tenants', admin, async () => ({ items: await deps.tenants.listTenants() }));
    app.post('/v1/admin/tenants/:id/keys', admin, async (request, reply) => {
      const { id } = idParams.parse(request.params);
      const parsed = z
        .object({
          scopes: z.array(z.enum(SCOPES)).min(1),
          /** Who the key belongs to; default: the key itself. Sessions belong to principals. */
          principal: z.string().regex(PRINCIPAL).optional(),
          /** When the key stops working: ms since epoch or an ISO 8601 date-time, in the future. */
          expiresAt: expiresAtSchema.optional(),
        })
        .strict()
        .safeParse(request.body);
      if (!parsed.success) throw validationProblem(parsed.error);
      if (!(await deps.tenants.getTenant(id))) throw new HttpProblem('not-found', `no tenant ${id}`);
      const { principal, expiresAt } = parsed.data;
      const options = {
        ...(principal ? { principal } : {}),
        ...(expiresAt !== undefined ? { expiresAt } : {}),
      };
      return reply.code(201).send(await deps.tenants.createKey(id, parsed.data.scopes, options));
    });
    app.get('/v1/admin/tenants/:id/keys', admin, async (request) => {
      const { id } = idParams.parse(request.params);
      if (!(await deps.tenants.getTenant(id))) throw new HttpProblem('not-found', `no tenant ${id}`);
      return { items: await deps.tenants.listKeys(id) };
    });
    app.delete('/v1/admin/tenants/:id/keys/:keyId', admin, async (request, reply) => {
      const { id, keyId } = keyParams.parse(request.params);
      // Refused everywhere before this answers: Redis, every replica's cache, open streams.
      if (!(await deps.tenants.revokeKey(id, keyId)))
        throw new HttpProblem('not-found', `tenant ${id} has no key ${keyId}`);
      return reply.code(204).send();
    });
    app.post('/v1/admin/tenants/:id/keys/:keyId/rotate', admin, async (request, reply) => {
      const { id, keyId } = keyParams.parse(request.params);
      const parsed = z
        .object({
          /** How long the current secret keeps working beside the new one; 0 = stops now. */
          graceSeconds: z.number().int().min(0).max(MAX_GRACE_SECONDS).default(0),
        })
        .strict()
        .safeParse(request.body ?? {});
      if (!parsed.success) throw validationProblem(parsed.error);
      const rotated = await deps.tenants.rotateKey(id, keyId, parsed.data.graceSeconds);
      if (!rotated) throw new HttpProblem('not-found', `tenant ${id} has no key ${keyId}`);
      const { dropped: _dropped, ...shown } = rotated;
      return reply.code(201).send(shown);
    });
  };
}
