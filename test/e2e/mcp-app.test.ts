/**
 * MCP servers as Apps (connection kind `mcp`), end to end: a real MCP server written with the SDK
 * (McpServer over Streamable HTTP on 127.0.0.1, counting every delivery itself) registered as a
 * connection of a real local cluster. Discovery, declarations, tools with structuredContent, an
 * isError tool, a resource, a prompt, replay after a decision with no second delivery, sealed
 * headers, and the tool list refreshed on notifications/tools/list_changed.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { keys } from '@islet/core';
import { type Cluster, startCluster } from '@islet/devstack';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Api, api, type Loose, until } from './helpers.ts';

const SECRET = 'Bearer shop-secret-7f3a';

/** The MCP server under test; `deliveries` are counted here, where the calls land. */
async function startShopServer() {
  const deliveries: Array<{ tool: string; args: Loose; idempotencyKey: unknown }> = [];
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const live = new Set<McpServer>();
  let withAdded = false;
  const addTool = (s: McpServer) =>
    s.registerTool(
      'added',
      { description: 'A tool that came later', inputSchema: { n: z.number() } },
      async ({ n }) => ({
        content: [{ type: 'text', text: String(n * 2) }],
      }),
    );
  const build = () => {
    const s = new McpServer({ name: 'shop', version: '1.0.0' });
    s.registerTool(
      'lookup',
      {
        description: 'Find an order',
        inputSchema: { id: z.string().describe('Order id') },
        outputSchema: { id: z.string(), total: z.number() },
      },
      async ({ id }, extra) => {
        deliveries.push({
          tool: 'lookup',
          args: { id },
          idempotencyKey: extra._meta?.['dev.islet/idempotencyKey'],
        });
        return { content: [{ type: 'text', text: `order ${id}` }], structuredContent: { id, total: 42 } };
      },
    );
    s.registerTool('fail', { description: 'Always fails', inputSchema: {} }, async (_args, extra) => {
      deliveries.push({ tool: 'fail', args: {}, idempotencyKey: extra._meta?.['dev.islet/idempotencyKey'] });
      return { isError: true, content: [{ type: 'text', text: 'no such order' }] };
    });
    s.registerTool(
      'ship',
      { description: 'Ship an order', inputSchema: { id: z.string() } },
      async ({ id }, extra) => {
        deliveries.push({
          tool: 'ship',
          args: { id },
          idempotencyKey: extra._meta?.['dev.islet/idempotencyKey'],
        });
        return { content: [{ type: 'text', text: `shipped ${id}` }] };
      },
    );
    s.registerResource(
      'readme',
      'memo://readme',
      { description: 'About the shop', mimeType: 'text/plain' },
      async (uri) => ({
        contents: [{ uri: uri.href, text: 'The shop sells tea.' }],
      }),
    );
    s.registerPrompt(
      'greet',
      { description: 'Greets someone', argsSchema: { name: z.string() } },
      ({ name }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name}` } }],
      }),
    );
    if (withAdded) addTool(s);
    return s;
  };
  const server: Server = createServer(async (req, res) => {
    if (req.headers.authorization !== SECRET) return res.writeHead(401).end('unauthorized');
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (!transport) {
      if (sid !== undefined) return res.writeHead(404).end('no session');
      const mcp = build();
      const t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, t);
        },
      });
      t.onclose = () => {
        if (t.sessionId) transports.delete(t.sessionId);
        live.delete(mcp);
      };
      live.add(mcp);
      await mcp.connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    deliveries,
    count: (tool: string, pred: (a: Loose) => boolean = () => true) =>
      deliveries.filter((d) => d.tool === tool && pred(d.args)).length,
    addTool() {
      withAdded = true;
      for (const s of live) addTool(s);
    },
    async close() {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => undefined)));
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

let cluster: Cluster;
let a: Api;
let shop: Awaited<ReturnType<typeof startShopServer>>;
let conn: Loose;

beforeAll(async () => {
  cluster = await startCluster({ gateways: 1, modes: ['read-only'] });
  a = api(cluster.url, cluster.devKey);
  shop = await startShopServer();
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await shop?.close();
});

const run = async (code: string, extra: Record<string, unknown> = {}) =>
  a(
    'POST',
    '/v1/runs',
    {
      code,
      description: 'Use the shop over MCP',
      sessionId: 's-mcp',
      turnId: 't1',
      callId: randomUUID(),
      connections: [conn.id],
      ...extra,
    },
    { prefer: 'wait=30' },
  );

describe('connection kind mcp', () => {
  it('registration lists the server: tools with schemas and policies, a resource, a prompt; headers stay sealed', async () => {
    const wrong = await a('POST', '/v1/connections', {
      name: 'Nope',
      kind: 'mcp',
      url: shop.url,
      headers: { authorization: 'Bearer wrong' },
    });
    expect(wrong.status).toBe(502);
    expect(wrong.body.type).toBe('https://islet.dev/problems/app-unreachable');

    const res = await a('POST', '/v1/connections', {
      name: 'Shop',
      kind: 'mcp',
      url: shop.url,
      headers: { authorization: SECRET },
      tools: [{ name: 'ship', policy: 'ask' }],
    });
    expect(res.status).toBe(201);
    conn = res.body;
    expect(conn.tools.map((t: Loose) => [t.name, t.policy])).toEqual([
      ['lookup', 'allow'],
      ['fail', 'allow'],
      ['ship', 'ask'],
    ]);
    expect(conn.tools[0].inputSchema.properties.id).toMatchObject({
      type: 'string',
      description: 'Order id',
    });
    expect(conn.tools[0].outputSchema.required).toEqual(['id', 'total']);
    expect(conn.resources).toEqual([{ name: 'readme', description: 'About the shop', uri: 'memo://readme' }]);
    expect(conn.prompts).toMatchObject([{ name: 'greet', arguments: [{ name: 'name', required: true }] }]);
    expect(conn.bindings).toEqual([
      'apps.shop.lookup',
      'apps.shop.fail',
      'apps.shop.ship',
      'apps.shop.readme',
      'apps.shop.greet',
    ]);
    expect(conn.headers).toEqual(['authorization']);
    expect(JSON.stringify(conn)).not.toContain('shop-secret');
    const redis = new Redis(cluster.redisUrl);
    try {
      expect(JSON.stringify(await redis.hgetall(keys.connections(cluster.tenantId)))).not.toContain(
        'shop-secret',
      );
    } finally {
      redis.disconnect();
    }
  });

  it('/v1/code-api declares the bindings from the JSON schemas, returning MCP results', async () => {
    const out = (await a('GET', '/v1/code-api?connection=shop')).body.declarations as string;
    expect(out).toContain('function lookup(args: {');
    expect(out).toContain('/** Order id */');
    expect(out).toMatch(
      /function lookup\(args: \{[\s\S]*?\}\): Promise<\{ content: Array<Record<string, unknown>>; structuredContent: \{[\s\S]*?total: number;/,
    );
    expect(out).toContain('function ship(args: {');
    expect(out).toContain('(policy: ask)');
    expect(out).toContain('function readme(args?: Record<string, unknown>): Promise<{ contents: Array<');
    expect(out).toMatch(
      /function greet\(args\?: \{\s+name: string;\s+\}\): Promise<\{ description\?: string; messages:/,
    );
  });

  it('a program gets MCP results: content, structuredContent, isError → AppCallFailed, a resource, a prompt', async () => {
    const res = await run(`
      const order = await apps.shop.lookup({ id: "A1" });
      let failure;
      try { await apps.shop.fail({}); } catch (e) { failure = { name: e.name, message: e.message, reason: e.details.reason }; }
      const readme = await apps.shop.readme();
      const prompt = await apps.shop.greet({ name: "Ada" });
      return { total: order.structuredContent.total, text: order.content[0].text, failure,
        readme: readme.contents[0].text, prompt: prompt.messages[0].content.text };`);
    expect(res.status).toBe(200);
    expect(res.body.status, JSON.stringify(res.body.result)).toBe('Completed');
    expect(res.body.result.value).toEqual({
      total: 42,
      text: 'order A1',
      failure: { name: 'AppCallFailed', message: 'no such order', reason: 'tool-error' },
      readme: 'The shop sells tea.',
      prompt: 'Hello Ada',
    });
    expect(res.body.calls.map((c: Loose) => c.binding)).toEqual([
      'shop.lookup',
      'shop.fail',
      'shop.readme',
      'shop.greet',
    ]);
    expect(shop.deliveries.find((d) => d.tool === 'lookup' && d.args.id === 'A1')?.idempotencyKey).toBe(
      `${res.body.id}:0`,
    );
  });

  it('a call that needs a decision stops the run; after it, the replay never sends the first call again', async () => {
    const res = await run(
      'const o = await apps.shop.lookup({ id: "B2" }); const s = await apps.shop.ship({ id: o.structuredContent.id }); return s.content[0].text',
      { approval: 'stop' },
    );
    expect(res.body.status).toBe('Waiting');
    const id = res.body.id;
    expect(shop.count('lookup', (x) => x.id === 'B2')).toBe(1);
    expect(shop.count('ship', (x) => x.id === 'B2')).toBe(0);
    expect((await a('POST', `/v1/code-runs/${id}/decisions`, { index: 1, allow: true })).status).toBe(200);
    const rec = await until(async () => {
      const r = await a('GET', `/v1/code-runs/${id}`);
      return ['Completed', 'Failed'].includes(r.body.status) && r.body;
    }, 30_000);
    expect(rec.status).toBe('Completed');
    expect(rec.result.value).toBe('shipped B2');
    // Replayed from the journal: the server saw lookup(B2) once and ship(B2) once.
    expect(shop.count('lookup', (x) => x.id === 'B2')).toBe(1);
    expect(shop.count('ship', (x) => x.id === 'B2')).toBe(1);
    expect(shop.deliveries.find((d) => d.tool === 'ship')?.idempotencyKey).toBe(`${id}:1`);
  }, 60_000);

  it('the cached tool list is refreshed on notifications/tools/list_changed', async () => {
    shop.addTool();
    const fresh = await until(async () => {
      const c = (await a('GET', `/v1/connections/${conn.id}`)).body;
      return c.tools.some((t: Loose) => t.name === 'added') && c;
    }, 20_000);
    // The tenant's policies survive the refresh.
    expect(fresh.tools.find((t: Loose) => t.name === 'ship').policy).toBe('ask');
    expect((await a('GET', '/v1/code-api?q=later')).body.declarations).toContain('function added(args: {');
    const res = await run('return (await apps.shop.added({ n: 21 })).content[0].text');
    expect(res.body.result.value).toBe('42');
  }, 40_000);
});
