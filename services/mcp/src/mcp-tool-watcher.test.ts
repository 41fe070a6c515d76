/**
 * Watching mcp connections for tool-list changes must not hold a stream and a socket per
 * connection for ever: 200 watched connections stay within the pool's bound of open sockets, and
 * a connection that comes back into the pool has its list refreshed. A real MCP server (the SDK's,
 * Streamable HTTP with sessions) on 127.0.0.1; sockets counted in /proc/self/fd.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMcpToolWatcher } from './mcp-tool-watcher.ts';

let server: Server;
let url: string;
const transports = new Map<string, StreamableHTTPServerTransport>();

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (!transport) {
      if (sid !== undefined) return res.writeHead(404).end('no session');
      const mcp = new McpServer({ name: 'fixture', version: '1.0.0' });
      mcp.registerTool('echo', { description: 'Echo', inputSchema: {} }, async () => ({ content: [] }));
      const t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, t);
        },
      });
      t.onclose = () => {
        if (t.sessionId) transports.delete(t.sessionId);
      };
      await mcp.connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/mcp`;
});

afterAll(async () => {
  await Promise.all([...transports.values()].map((t) => t.close().catch(() => undefined)));
  server?.closeAllConnections();
  await new Promise<void>((r) => server?.close(() => r()));
});

const sockets = () =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:');
    } catch {
      return false;
    }
  }).length;

const settle = async (until: () => boolean) => {
  for (let i = 0; i < 100 && !until(); i++) await new Promise((r) => setTimeout(r, 50));
};

it('200 watched mcp connections do not hold 200 sockets; a connection back in the pool is refreshed', async () => {
  const refreshed: string[] = [];
  const watcher = createMcpToolWatcher({
    maxWatched: 8,
    onToolsChanged: async (_tenant, id, tools) => {
      expect(tools.map((t) => t.name)).toEqual(['echo']);
      refreshed.push(id);
    },
  });
  const target = { url, headers: {}, timeoutMs: 10_000, fetch };
  const before = sockets();
  try {
    for (let i = 0; i < 200; i++) await watcher.watch('t', `conn-${i}`, target);
    await settle(() => sockets() - before < 60);
    expect(watcher.watching()).toBe(8);
    // Client and server ends of 8 streams and their sessions' POSTs, with room for keep-alive: far from 200.
    expect(sockets() - before).toBeLessThan(60);
    // conn-0 was evicted long ago: watching it again refreshes its list once.
    await watcher.watch('t', 'conn-0', target);
    expect(refreshed).toEqual(['conn-0']);
    // A watched connection's use keeps it in the pool (no new session, no refresh).
    await watcher.watch('t', 'conn-0', target);
    expect(refreshed).toEqual(['conn-0']);
  } finally {
    await watcher.close();
  }
});
