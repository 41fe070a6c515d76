/**
 * Keeps the cached tool list of `mcp` connections fresh: a long-lived MCP session per watched
 * connection listens for `notifications/tools/list_changed` and hands the new list to
 * `onToolsChanged` (the gateway rewrites the connection record, the cache every replica reads).
 * A replica watches the connections it registered or called, but at most `maxWatched` at once
 * (each holds a stream and a socket): the least recently used watch is closed for a new one, and
 * a connection that comes back into the pool has its list refreshed once on the way in (it may
 * have changed while nobody listened). A lost session is dropped and started again on the next call.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { CLIENT_INFO, type DiscoveredTool, listTools, type McpAppTarget } from './mcp-app.ts';

interface McpToolWatcherOptions {
  onToolsChanged: (tenant: string, connectionId: string, tools: DiscoveredTool[]) => Promise<void>;
  onError?: (err: Error, tenant: string, connectionId: string) => void;
  /** Watches held at once (streams and sockets); default 32. */
  maxWatched?: number;
}

export function createMcpToolWatcher(o: McpToolWatcherOptions) {
  // Insertion order is recency: a use moves the entry to the end, the first is the least recent.
  const watching = new Map<string, Client>();
  // Connections watched once and evicted since: their list is refreshed when they come back.
  const evicted = new Set<string>();
  const maxWatched = o.maxWatched ?? 32;
  const keyOf = (tenant: string, id: string) => `${tenant}\u0000${id}`;

  async function watch(tenant: string, connectionId: string, target: McpAppTarget): Promise<void> {
    const key = keyOf(tenant, connectionId);
    const held = watching.get(key);
    if (held) {
      watching.delete(key);
      watching.set(key, held);
      return;
    }
    while (watching.size >= maxWatched) {
      const [oldest, client] = watching.entries().next().value as [string, Client];
      watching.delete(oldest);
      if (evicted.size >= 10_000) evicted.clear();
      evicted.add(oldest);
      void client.close().catch(() => undefined);
    }
    const client = new Client(CLIENT_INFO);
    watching.set(key, client);
    const returning = evicted.delete(key);
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
    if (returning && watching.get(key) === client)
      await listTools(client, target.timeoutMs)
        .then((tools) => o.onToolsChanged(tenant, connectionId, tools))
        .catch((err: Error) => o.onError?.(err, tenant, connectionId));
  }

  async function unwatch(tenant: string, connectionId: string): Promise<void> {
    const key = keyOf(tenant, connectionId);
    const client = watching.get(key);
    watching.delete(key);
    evicted.delete(key);
    await client?.close().catch(() => undefined);
  }

  async function close(): Promise<void> {
    const all = [...watching.values()];
    watching.clear();
    await Promise.all(all.map((c) => c.close().catch(() => undefined)));
  }

  return { watch, unwatch, close, watching: () => watching.size };
}
