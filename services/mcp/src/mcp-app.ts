/**
 * MCP servers as Apps (connection kind `mcp`): the SDK client that discovers a server's tools,
 * resources and prompts, and makes one binding call. Each call opens its own short MCP session
 * (initialize → call → terminate): nothing about a call survives in gateway memory, so any
 * replica can make it, and the call journal around it stays the only record.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export interface McpAppTarget {
  url: string;
  /** Opened from the connection's sealed secret (e.g. an Authorization header). */
  headers: Record<string, string>;
  /** A fetch that keeps the caller's outbound address rules. */
  fetch: typeof fetch;
  timeoutMs: number;
}

export interface DiscoveredTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}
interface DiscoveredResource {
  name: string;
  description?: string;
  uri: string;
}
interface DiscoveredPrompt {
  name: string;
  description?: string;
  arguments?: Array<{ name: string; description?: string; required?: boolean }>;
}
export interface Discovery {
  tools: DiscoveredTool[];
  resources: DiscoveredResource[];
  prompts: DiscoveredPrompt[];
}

export type McpAppAnswer =
  | { type: 'result'; value: unknown }
  | { type: 'error'; message: string; reason: string; details?: Record<string, unknown> };

export const CLIENT_INFO = { name: 'islet', version: '0.1.0' };

async function withMcpClient<T>(
  target: McpAppTarget,
  extraHeaders: Record<string, string>,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
  const client = new Client(CLIENT_INFO);
  const transport = new StreamableHTTPClientTransport(new URL(target.url), {
    requestInit: { headers: { ...target.headers, ...extraHeaders } },
    fetch: target.fetch,
  });
  await client.connect(transport, { timeout: target.timeoutMs });
  try {
    return await fn(client);
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

const describe = <T extends { description?: string | undefined }>(x: T) =>
  x.description ? { description: x.description } : {};

export async function listTools(client: Client, timeoutMs: number): Promise<DiscoveredTool[]> {
  const tools: DiscoveredTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
    for (const t of page.tools)
      tools.push({
        name: t.name,
        ...describe(t),
        inputSchema: t.inputSchema as Record<string, unknown>,
        ...(t.outputSchema ? { outputSchema: t.outputSchema as Record<string, unknown> } : {}),
      });
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/** What the server offers; a capability it does not declare is an empty list. */
export async function discover(target: McpAppTarget): Promise<Discovery> {
  return withMcpClient(target, {}, async (client) => {
    const caps = client.getServerCapabilities() ?? {};
    const opts = { timeout: target.timeoutMs };
    const resources: DiscoveredResource[] = [];
    const prompts: DiscoveredPrompt[] = [];
    if (caps.resources) {
      let cursor: string | undefined;
      do {
        const page = await client.listResources(cursor ? { cursor } : {}, opts);
        for (const r of page.resources) resources.push({ name: r.name, ...describe(r), uri: r.uri });
        cursor = page.nextCursor;
      } while (cursor);
    }
    if (caps.prompts) {
      let cursor: string | undefined;
      do {
        const page = await client.listPrompts(cursor ? { cursor } : {}, opts);
        for (const p of page.prompts)
          prompts.push({ name: p.name, ...describe(p), ...(p.arguments ? { arguments: p.arguments } : {}) });
        cursor = page.nextCursor;
      } while (cursor);
    }
    return { tools: caps.tools ? await listTools(client, target.timeoutMs) : [], resources, prompts };
  });
}

export interface McpAppCall {
  kind: 'tool' | 'resource' | 'prompt';
  name: string;
  /** A resource's URI. */
  uri?: string;
  args: unknown;
  /** `<run>:<index>`: sent as the Idempotency-Key header and in the request's `_meta`. */
  idempotencyKey: string;
  operationId: string;
}

/**
 * One binding call. A tool's result reaches the program as the MCP result (`content`,
 * `structuredContent`); `isError` becomes `AppCallFailed` with reason `tool-error`.
 */
export async function callMcpApp(target: McpAppTarget, call: McpAppCall): Promise<McpAppAnswer> {
  const meta = { 'dev.islet/idempotencyKey': call.idempotencyKey, 'dev.islet/operationId': call.operationId };
  return withMcpClient(target, { 'idempotency-key': call.idempotencyKey }, async (client) => {
    const opts = { timeout: target.timeoutMs };
    const args = call.args && typeof call.args === 'object' && !Array.isArray(call.args) ? call.args : {};
    if (call.kind === 'resource') {
      if (!call.uri) return { type: 'error', reason: 'no-uri', message: `resource ${call.name} has no URI` };
      const read = await client.readResource({ uri: call.uri, _meta: meta }, opts);
      return { type: 'result', value: { contents: read.contents } };
    }
    if (call.kind === 'prompt') {
      const got = await client.getPrompt(
        {
          name: call.name,
          arguments: Object.fromEntries(Object.entries(args).map(([k, v]) => [k, String(v)])),
          _meta: meta,
        },
        opts,
      );
      return {
        type: 'result',
        value: { ...(got.description ? { description: got.description } : {}), messages: got.messages },
      };
    }
    const result = await client.callTool(
      { name: call.name, arguments: args as Record<string, unknown>, _meta: meta },
      undefined,
      opts,
    );
    const value: Record<string, unknown> = { content: result.content ?? [] };
    if (result.structuredContent !== undefined) value.structuredContent = result.structuredContent;
    if (result.isError) {
      const text = (result.content as Array<{ type: string; text?: string }> | undefined)
        ?.filter((c) => c.type === 'text')
        .map((c) => c.text)
        .join('\n');
      return {
        type: 'error',
        reason: 'tool-error',
        message: text || `${call.name} failed`,
        details: { result: value },
      };
    }
    return { type: 'result', value };
  });
}
