/** `/mcp`, `/v1/tools` and the tenants' MCP settings: `@islet/mcp`'s plugin over the gateway's host. */
import { principalOf } from '@islet/core';
import { mcpRoutes as mcpPlugin } from '@islet/mcp';
import type { FastifyPluginAsync, preHandlerHookHandler } from 'fastify';
import { callerOf } from '../auth.ts';
import { createMcpHost } from '../mcp-host.ts';
import type { RouteContext } from './context.ts';

export function mcpRoutes(ctx: RouteContext): FastifyPluginAsync {
  return async (app) => {
    const { host, close } = createMcpHost(ctx.deps, ctx.runsService, ctx.closing);
    app.addHook('onClose', async () => close());
    await app.register(
      mcpPlugin({
        host,
        storage: ctx.deps.mcpStorage,
        authenticate: ctx.auth.requireScopes('apps.use') as unknown as preHandlerHookHandler,
        authenticateAdmin: ctx.auth.requireScopes('platform.admin') as unknown as preHandlerHookHandler,
        resolveCaller: (request) => {
          const c = callerOf(request);
          return { tenantId: c.tenantId, keyId: c.keyId, principal: principalOf(c), scopes: c.scopes };
        },
        tenantExists: async (id) => (await ctx.deps.tenants.getTenant(id)) !== null,
        closing: ctx.closing,
        version: '0.1.0',
      }),
    );
  };
}
