/**
 * A tenant's run policy (helper-5): which contract's rules its runs follow — `code-mode` (stop
 * and replay after a decision; waiting for App calls does not count against the budget) or
 * `run_code` (hold in place; elapsed time counts) — with per-rule overrides. Platform admins set
 * it; it applies to runs accepted afterwards (each run keeps the rules it was accepted with).
 */
import { runPolicySchema } from '@islet/runs';
import type { FastifyPluginAsync } from 'fastify';
import { HttpProblem, validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

export function runPolicyRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  const store = deps.runPolicies;
  const admin = { preHandler: auth.requireScopes('platform.admin') };
  return async (app) => {
    app.get('/v1/admin/tenants/:id/run-policy', admin, async (request) => {
      const { id } = idParams.parse(request.params);
      if (!(await deps.tenants.getTenant(id))) throw new HttpProblem('not-found', `no tenant ${id}`);
      return { ...(await store.get(id)), effective: await store.effective(id) };
    });
    app.put('/v1/admin/tenants/:id/run-policy', admin, async (request) => {
      const { id } = idParams.parse(request.params);
      const parsed = runPolicySchema.safeParse(request.body ?? {});
      if (!parsed.success) throw validationProblem(parsed.error, '', runPolicySchema);
      if (!(await deps.tenants.getTenant(id))) throw new HttpProblem('not-found', `no tenant ${id}`);
      return { ...(await store.set(id, parsed.data)), effective: await store.effective(id) };
    });
  };
}
