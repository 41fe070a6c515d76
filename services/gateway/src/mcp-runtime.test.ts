/**
 * run_code over MCP follows this deployment's runtime switches and refusals exactly as
 * POST /v1/runs does (one code path), Code Mode's tools are offered only where Code Mode can run,
 * run_code's description states the runtime's rules and the tenant's Apps, get_run reads a run
 * later, a waiting run points a person at its console page, and a 401 says how to authenticate.
 * A real gateway over real HTTP and Redis, the official MCP client; no runner (nothing here runs).
 */
import { decisionText, type McpRunState } from '@islet/mcp';
import { RUN_CODE_REFUSALS } from '@islet/protocol';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewaysUnderTest, startGateways } from '../test/gateway-harness.ts';

let gateways: GatewaysUnderTest | undefined;
const clients: Client[] = [];

beforeAll(async () => {
  gateways = await startGateways({ env: { ISLET_INTERNAL_TOKEN: 'internal-token-mcp-runtime' } });
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await gateways?.close();
});

/** A listening gateway with these runtime switches; its URL and a fresh tenant's key. */
async function gateway(env: Record<string, string>, tenant: string) {
  const { app, deps } = await gateways!.add({ env });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  await deps.tenants.createTenant({ id: tenant, name: tenant });
  const key = (await deps.tenants.createKey(tenant, ['apps.use'])).key;
  return { url, key, deps };
}

async function connect(url: string, key: string) {
  const client = new Client({ name: 'islet-test-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  clients.push(client);
  return client;
}

const textOf = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;
const run = { code: 'return 1', description: 'Return one for the test' };

describe('run_code over MCP and the runtime switches', () => {
  it('refuses timeoutMs and sandbox_permissions when the deployment cannot honour them, as HTTP does', async () => {
    const g = await gateway(
      { ISLET_RUNTIME_TIMEOUT_MS: 'false', ISLET_RUNTIME_SANDBOX_PERMISSIONS: 'false' },
      'switches',
    );
    const client = await connect(g.url, g.key);
    const timeout = await client.callTool({ name: 'run_code', arguments: { ...run, timeoutMs: 5000 } });
    expect(timeout.isError).toBe(true);
    expect(textOf(timeout)).toBe(RUN_CODE_REFUSALS.timeoutMsUnavailable);
    const wide = await client.callTool({
      name: 'run_code',
      arguments: {
        ...run,
        sandbox_permissions: 'danger-full-access',
        justification: 'Needs to write the repo.',
      },
    });
    expect(textOf(wide)).toBe(RUN_CODE_REFUSALS.sandboxPermissionsUnavailable);
    // The HTTP route gives the same words for the same request.
    const http = await fetch(`${g.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...run, timeoutMs: 5000 }),
    });
    expect(((await http.json()) as { detail: string }).detail).toBe(RUN_CODE_REFUSALS.timeoutMsUnavailable);
    // Nothing was submitted for any of them.
    expect(await g.deps.redis.keys('islet:run:*')).toEqual([]);

    const description = (await client.listTools()).tools.find((t) => t.name === 'run_code')!.description!;
    expect(description).toContain('timeoutMs is not available here');
    expect(description).toContain('sandbox_permissions is not available here');
  });

  it('refuses the contract refusals and unknown fields with the same texts as POST /v1/runs', async () => {
    const g = await gateway({}, 'texts');
    const client = await connect(g.url, g.key);
    const empty = await client.callTool({
      name: 'run_code',
      arguments: { code: 'return 1', description: ' ' },
    });
    expect(textOf(empty)).toBe(RUN_CODE_REFUSALS.description);
    const unknown = await client.callTool({ name: 'run_code', arguments: { ...run, timeout: 5 } });
    expect(textOf(unknown)).toBe('unknown field "timeout" (did you mean "timeoutMs"?)');
  });
});

describe('which tools are offered', () => {
  it('Code Mode tools only when Code Mode is on and the tenant has Apps; get_run always', async () => {
    const g = await gateway({}, 'listing');
    const names = async () => (await (await connect(g.url, g.key)).listTools()).tools.map((t) => t.name);
    // A fresh install: Code Mode off.
    expect(await names()).toEqual(['run_code', 'run_code_skill', 'get_run']);
    const current = await g.deps.settings.get();
    await g.deps.settings.update(current.version, { enabled: true });
    // On, but no Apps yet.
    expect(await names()).toEqual(['run_code', 'run_code_skill', 'get_run']);
    const refused = await (await connect(g.url, g.key)).callTool({
      name: 'openbot_run_code',
      arguments: { code: 'return 1' },
    });
    expect(textOf(refused)).toBe(
      'openbot_run_code is not offered: Code Mode is off on this platform, or this tenant has no Apps',
    );
    const created = await g.deps.connections.create('listing', {
      name: 'Invoices',
      kind: 'http',
      url: 'https://invoices.example.com/',
      tools: [{ name: 'create_invoice', inputSchema: {}, policy: 'allow' }],
      resources: [],
      prompts: [],
    });
    expect(created.ok).toBe(true);
    expect(await names()).toEqual([
      'run_code',
      'openbot_code_api',
      'openbot_run_code',
      'run_code_skill',
      'get_run',
    ]);
  });

  it("run_code's description and the code API state the runtime's rules and the tenant's Apps", async () => {
    const g = await gateway({ ISLET_RUN_CODE_MAX_TIMEOUT_MS: '300000' }, 'rules');
    await g.deps.connections.create('rules', {
      name: 'Calendar',
      kind: 'http',
      url: 'https://cal.example.com/',
      tools: [
        { name: 'list-events', inputSchema: {}, policy: 'allow' },
        { name: 'add', inputSchema: {}, policy: 'allow' },
      ],
      resources: [],
      prompts: [],
    });
    const client = await connect(g.url, g.key);
    const description = (await client.listTools()).tools.find((t) => t.name === 'run_code')!.description!;
    for (const rule of [
      'Date.now() and new Date() are fixed at the run start',
      'No timers (setTimeout, setInterval)',
      'must be plain JSON',
      'timeoutMs up to 300000 ms',
      'calendar (list_events, add)',
    ])
      expect(description).toContain(rule);
    const current = await g.deps.settings.get();
    await g.deps.settings.update(current.version, { enabled: true });
    const api = await (await connect(g.url, g.key)).callTool({ name: 'openbot_code_api', arguments: {} });
    expect(textOf(api)).toContain(' * Runtime rules: JavaScript');
  });
});

describe('get_run, the console link, 401', () => {
  it("get_run reads a run of the caller's and no one else's", async () => {
    const g = await gateway({}, 'reader');
    const submitted = await fetch(`${g.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(run),
    });
    const id = ((await submitted.json()) as { id: string }).id;
    const client = await connect(g.url, g.key);
    const got = await client.callTool({ name: 'get_run', arguments: { runId: id } });
    expect(textOf(got)).toBe(`The run ${id} is still queued; read its result with GET /v1/code-runs/${id}.`);
    await g.deps.tenants.createTenant({ id: 'stranger', name: 'stranger' });
    const other = await connect(g.url, (await g.deps.tenants.createKey('stranger', ['apps.use'])).key);
    const hidden = await other.callTool({ name: 'get_run', arguments: { runId: id } });
    expect(hidden.isError).toBe(true);
    expect(textOf(hidden)).toBe(`no run ${id}`);
  });

  it('a waiting run points a person at its console page', () => {
    const state = {
      id: 'run-1',
      status: 'Waiting',
      started: true,
      record: {} as McpRunState['record'],
      decisions: [{ id: 'run-1:0', index: 0, summary: 'call x' }],
    } satisfies McpRunState;
    expect(decisionText(state, 'https://islet.example.com')).toContain(
      "A person can answer it on the run's console page: https://islet.example.com/console/#/runs/run-1",
    );
  });

  it('answers 401 with WWW-Authenticate', async () => {
    const g = await gateway({}, 'anon');
    const res = await fetch(`${g.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="islet", error="invalid_token"');
  });
});
