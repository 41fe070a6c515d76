/**
 * `GET /v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD`: a tenant's usage per UTC day, as the runs' ends
 * counted it in the run index (`@islet/runs` run-index.ts): runs by final status, wall ms, binding
 * calls, output bytes, skill runs. A key with `sessions.admin` reads its tenant's; `platform.admin`
 * reads every tenant's (or one, with `tenant`). Days default to the last 30 (today included).
 */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../auth.ts';
import type { RouteContext } from './context.ts';
import { badParameter, onlyKnownParameters, reportScope } from './params.ts';

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MAX_DAYS = 366;

export function usageRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  return async (app) => {
    app.get('/v1/usage', { preHandler: auth.requireScopes() }, async (request) => {
      const caller = callerOf(request);
      const query = request.query as Record<string, unknown>;
      onlyKnownParameters(query, ['from', 'to', 'tenant']);
      const day = (name: string, fallback: string) => {
        const v = query[name];
        if (v === undefined) return fallback;
        if (typeof v !== 'string' || !DAY.test(v) || Number.isNaN(Date.parse(v)))
          throw badParameter(name, 'expected a UTC day, YYYY-MM-DD');
        return v;
      };
      const today = new Date().toISOString().slice(0, 10);
      const to = day('to', today);
      const from = day('from', new Date(Date.parse(to) - 29 * 86_400_000).toISOString().slice(0, 10));
      const span = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1;
      if (span < 1) throw badParameter('from', 'must not be after to');
      if (span > MAX_DAYS) throw badParameter('from', `at most ${MAX_DAYS} days from to`);
      const { admin, tenant } = reportScope(caller, query.tenant, 'usage');
      const tenants =
        typeof tenant === 'string'
          ? [tenant]
          : admin
            ? (await deps.tenants.listTenants()).map((t) => t.id)
            : [caller.tenantId];
      const items = await Promise.all(
        tenants.map(async (id) => ({ tenant: id, days: await deps.runIndex.usage(id, from, to) })),
      );
      return { from, to, items };
    });
  };
}
