/**
 * Connection kind `mcp`: a tenant's remote MCP server (Streamable HTTP) as an App, through
 * `@islet/mcp`'s client. Registration discovers its tools, resources and prompts (the connection
 * record is the cached tool list, refreshed when the server says `notifications/tools/list_changed`);
 * each binding call is one MCP request made inside the call processor's send step, so it is
 * journaled, replayed and never sent twice like an http App's. Headers come from the connection's
 * sealed secret; every request goes through the gateway's outbound address rules.
 */
import {
  callMcpApp,
  createMcpToolWatcher,
  type DiscoveredTool,
  type Discovery,
  discover,
  type McpAppAnswer,
  type McpAppCall,
  type McpAppTarget,
} from '@islet/mcp';
import type { Connection, ConnectionInput, Tool } from './connections.ts';
import type { GatewayDeps } from './deps.ts';
import { guardedFetch } from './guarded-fetch.ts';

/** Discovered tools with the tenant's policies (by tool name; default `allow`). */
function toolsWithPolicies(found: DiscoveredTool[], policies: ReadonlyMap<string, Tool['policy']>): Tool[] {
  return found.map((t) => ({
    name: t.name,
    ...(t.description ? { description: t.description.slice(0, 2000) } : {}),
    inputSchema: t.inputSchema,
    ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
    policy: policies.get(t.name) ?? 'allow',
  }));
}

export function createMcpApps(deps: GatewayDeps) {
  const { config, sealer, connections, logger } = deps;
  const fetchImpl = guardedFetch({
    allowPrivate: config.ISLET_APP_ALLOW_PRIVATE_NETWORKS === 'true',
    connectTimeoutMs: config.ISLET_APP_CALL_TIMEOUT_MS,
    maxResponseBytes: config.ISLET_APP_ANSWER_MAX_BYTES,
  });

  const target = (url: string, headers: Record<string, string>): McpAppTarget => ({
    url,
    headers,
    fetch: fetchImpl,
    timeoutMs: config.ISLET_APP_CALL_TIMEOUT_MS,
  });
  const targetOf = (c: Connection) =>
    target(
      c.url!,
      c.sealedHeaders ? (JSON.parse(sealer.open(c.sealedHeaders)) as Record<string, string>) : {},
    );

  const watcher = createMcpToolWatcher({
    maxWatched: config.ISLET_MCP_WATCHED_CONNECTIONS,
    async onToolsChanged(tenant, connectionId, tools) {
      const current = await connections.get(tenant, connectionId);
      if (current?.kind !== 'mcp') return;
      const policies = new Map(current.tools.map((t) => [t.name, t.policy] as const));
      await connections.replace(tenant, { ...current, tools: toolsWithPolicies(tools, policies) });
      logger.info({ tenant, connectionId, tools: tools.length }, 'mcp connection tool list refreshed');
    },
    onError(err, tenant, connectionId) {
      logger.warn({ tenant, connectionId, err: err.message }, 'mcp connection watch failed');
    },
  });

  return {
    /** What a server offers, with the tenant's per-tool policies folded in. */
    async discover(input: ConnectionInput): Promise<Discovery & { tools: Tool[] }> {
      const found = await discover(target(input.url!, input.headers ?? {}));
      const policies = new Map(input.tools.map((t) => [t.name, t.policy] as const));
      return { ...found, tools: toolsWithPolicies(found.tools, policies) };
    },
    sealHeaders: (headers: Record<string, string> | undefined) =>
      headers && Object.keys(headers).length ? sealer.seal(JSON.stringify(headers)) : undefined,
    watch(tenant: string, c: Connection) {
      void watcher.watch(tenant, c.id, targetOf(c));
    },
    unwatch: (tenant: string, id: string) => watcher.unwatch(tenant, id),
    call(tenant: string, c: Connection, call: McpAppCall): Promise<McpAppAnswer> {
      // A replica that serves calls of a connection also listens for its tool-list changes.
      void watcher.watch(tenant, c.id, targetOf(c));
      return callMcpApp(targetOf(c), call);
    },
    close: () => watcher.close(),
  };
}

export type McpApps = ReturnType<typeof createMcpApps>;
