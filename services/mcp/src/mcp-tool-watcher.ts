/**
 * Keeps the cached tool list of `mcp` connections fresh: one long-lived MCP session per watched
 * connection listens for `notifications/tools/list_changed` and hands the new list to
 * `onToolsChanged` (the gateway rewrites the connection record, the cache every replica reads).
 * A replica watches the connections it registered or called; a lost session is dropped and
 * started again on the next call.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { CLIENT_INFO, type DiscoveredTool, listTools, type McpAppTarget } from './mcp-app.ts';

export interface McpToolWatcherOptions {
  onToolsChanged: (tenant: string, connectionId: string, tools: DiscoveredTool[]) => Promise<void>;
  onError?: (err: Error, tenant: string, connectionId: string) => void;
}

export function createMcpToolWatcher(o: McpToolWatcherOptions) {
  const watching = new Map<string, Client>();
  const keyOf = (tenant: string, id: string) => `${tenant}\u0000${id}`;

  async function watch(tenant: string, connectionId: string, target: McpAppTarget): Promise<void> {
    const key = keyOf(tenant, connectionId);
    if (watching.has(key)) return;
    const client = new Client(CLIENT_INFO);
    watching.set(key, client);
    const fail = (err: Error) => {
      if (watching.get(key) === client) watching.delete(key);
      o.onError?.(err, tenant, connectionId);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      try {
        await o.onToolsChanged(tenant, connectionId, await listTools(client, target.timeoutMs));
      } catch (err) {
        o.onError?.(err as Error, tenant, connectionId);
      }
    });
    client.onclose = () => {
      if (watching.get(key) === client) watching.delete(key);
    };
    const transport = new StreamableHTTPClientTransport(new URL(target.url), {
      requestInit: { headers: target.headers },
      fetch: target.fetch,
    });
    await client.connect(transport, { timeout: target.timeoutMs }).catch(fail);
  }

  async function unwatch(tenant: string, connectionId: string): Promise<void> {
    const key = keyOf(tenant, connectionId);
    const client = watching.get(key);
    watching.delete(key);
    await client?.close().catch(() => undefined);
  }

  async function close(): Promise<void> {
    const all = [...watching.values()];
    watching.clear();
    await Promise.all(all.map((c) => c.close().catch(() => undefined)));
  }

  return { watch, unwatch, close, watching: () => watching.size };
}

export type McpToolWatcher = ReturnType<typeof createMcpToolWatcher>;
