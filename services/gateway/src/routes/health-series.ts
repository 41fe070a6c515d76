/**
 * `GET /v1/health?minutes=60`: health over the last hour (or fewer minutes) in 10 s buckets, what
 * the console's Health page draws: runs ended per second and by status, p50/p99 latency (creation
 * to end), failures by kind, queue depth, runner slots busy, decisions pending (@islet/runs
 * health-store.ts). A key with `sessions.admin` reads its tenant's; `platform.admin` reads the
 * whole cluster's (queue depth and slots per mode; counters summed over every tenant), or one
 * tenant's with `tenant`.
 */

import { HEALTH_WINDOW_MS } from '@islet/runs';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { badParameter, onlyKnownParameters, reportScope } from './params.ts';

const MAX_MINUTES = HEALTH_WINDOW_MS / 60_000;

export function healthSeriesRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  return async (app) => {
    app.get('/v1/health', { preHandler: auth.requireScopes() }, async (request) => {
      const caller = callerOf(request);
      const query = request.query as Record<string, unknown>;
      onlyKnownParameters(query, ['minutes', 'tenant']);
      let minutes = MAX_MINUTES;
      if (query.minutes !== undefined) {
        const v = query.minutes;
        if (typeof v !== 'string' || !/^\d{1,3}$/.test(v) || Number(v) < 1 || Number(v) > MAX_MINUTES)
          throw badParameter('minutes', `expected a whole number from 1 to ${MAX_MINUTES}`);
        minutes = Number(v);
      }
      const { admin, tenant } = reportScope(caller, query.tenant, 'health');
      const to = Date.now();
      const from = to - minutes * 60_000;
      if (typeof tenant === 'string') {
        if (!(await deps.tenants.getTenant(tenant)))
          throw new HttpProblem('not-found', `no tenant ${tenant}`);
        return { scope: 'tenant', tenant, ...(await deps.health.series({ tenant }, from, to)) };
      }
      if (admin) {
        const all = (await deps.tenants.listTenants()).map((t) => t.id);
        return { scope: 'cluster', ...(await deps.health.series({ cluster: all }, from, to)) };
      }
      return {
        scope: 'tenant',
        tenant: caller.tenantId,
        ...(await deps.health.series({ tenant: caller.tenantId }, from, to)),
      };
    });
  };
}
