/**
 * The one place route groups are registered. Each group is a plugin file in this folder; new
 * groups (decisions, skills, workspace files) add a file and a line here.
 */
import type { FastifyInstance } from 'fastify';
import { createRouteCatalog } from '../openapi.ts';
import { adminRoutes } from './admin.ts';
import { codeApiRoutes } from './code-api.ts';
import { connectionsRoutes } from './connections.ts';
import { consoleRoutes } from './console.ts';
import type { RouteContext } from './context.ts';
import { decisionsRoutes } from './decisions.ts';
import { eventsRoutes } from './events.ts';
import { healthRoutes } from './health.ts';
import { healthSeriesRoutes } from './health-series.ts';
import { internalRoutes } from './internal.ts';
import { mcpRoutes } from './mcp.ts';
import { metricsRoutes } from './metrics.ts';
import { runListRoutes } from './run-lists.ts';
import { runPolicyRoutes } from './run-policy.ts';
import { runsRoutes } from './runs.ts';
import { settingsRoutes } from './settings.ts';
import { tenantEventsRoutes } from './tenant-events.ts';
import { usageRoutes } from './usage.ts';
import { workspaceRoutes } from './workspace.ts';

const ROUTE_GROUPS = [
  healthRoutes,
  metricsRoutes,
  runsRoutes,
  runListRoutes,
  usageRoutes,
  healthSeriesRoutes,
  tenantEventsRoutes,
  eventsRoutes,
  connectionsRoutes,
  codeApiRoutes,
  settingsRoutes,
  adminRoutes,
  internalRoutes,
  decisionsRoutes,
  runPolicyRoutes,
  workspaceRoutes,
  consoleRoutes,
  mcpRoutes,
];

/**
 * Which routes a listener serves: `all` (one port), or split so the runner channel is on its own
 * port (ISLET_INTERNAL_PORT) that no Service/Ingress exposes: `public` has everything but the
 * internal routes, `internal` only the internal routes and health. `metrics` (ISLET_METRICS_PORT)
 * is health and /metrics; with it, `public` leaves /metrics out (`withMetrics: false`).
 */
export type Surface = 'all' | 'public' | 'internal' | 'metrics';

export async function registerRoutes(
  app: FastifyInstance,
  ctx: RouteContext,
  extra: Array<(ctx: RouteContext) => Parameters<FastifyInstance['register']>[0]> = [],
  surface: Surface = 'all',
  withMetrics = true,
) {
  const groups =
    surface === 'internal'
      ? [healthRoutes, internalRoutes]
      : surface === 'metrics'
        ? [healthRoutes, metricsRoutes]
        : [...ROUTE_GROUPS, ...extra].filter(
            (g) => (surface === 'all' || g !== internalRoutes) && (withMetrics || g !== metricsRoutes),
          );
  // The OpenAPI document lists what was registered here, so it never describes a route this
  // listener does not serve, nor misses one it does.
  const routes = ctx.routes ?? createRouteCatalog();
  app.addHook('onRoute', routes.onRoute);
  const withRoutes = { ...ctx, routes };
  for (const group of groups) await app.register(group(withRoutes));
}
