/**
 * The MCP surface's HTTP routes, a fastify plugin the gateway registers with its own API-key check:
 * - `POST /mcp`: Streamable HTTP. `initialize` opens a session (`Mcp-Session-Id`, kept in Redis so
 *   any replica serves it; the Islet session of the same id holds its runs and workspace); every
 *   other message needs the session header and the session's own tenant (another tenant's is 404).
 *   Each request gets a fresh SDK server and transport (stateless mode) answering on its own SSE
 *   stream, where progress notifications go too.
 * - `GET /mcp`: 405 (no server-initiated stream; everything rides on the POST's stream).
 * - `DELETE /mcp`: ends the session.
 * - `GET /v1/tools?format=mcp|openai|anthropic`: the caller's tools as definitions.
 * - `GET|PUT /v1/admin/tenants/:id/mcp`: a tenant's surface settings (platform admins).
 */
import { randomUUID } from 'node:crypto';
import { PROBLEM_CONTENT_TYPE, type ProblemCode, problem } from '@islet/protocol';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { z } from 'zod';
import type { McpCaller, McpHost } from './host.ts';
import {
  createIsletMcpServer,
  ELICITATION_ID_PREFIX,
  ELICITATION_POLL_MS,
  ELICITATION_TIMEOUT_MS,
  type Elicit,
} from './islet-mcp-server.ts';
import { mcpSettingsSchema, resolveTools } from './mcp-settings.ts';
import type { McpStore, StoredMcpSession } from './mcp-store.ts';
import { TOOL_FORMATS, toolDefinitions } from './tool-definitions.ts';

/** An idle MCP session is forgotten after this long, s (each request renews it). */
const MCP_SESSION_TTL_SECONDS = 86_400;

interface McpRoutesOptions {
  host: McpHost;
  /** Where MCP sessions, request→run ids, elicitation answers and settings live (mcp-store.ts). */
  storage: McpStore;
  /** API key with scope `apps.use`; sets what `resolveCaller` reads. */
  authenticate: preHandlerHookHandler;
  /** API key with scope `platform.admin`. */
  authenticateAdmin: preHandlerHookHandler;
  resolveCaller: (request: FastifyRequest) => McpCaller;
  tenantExists: (id: string) => Promise<boolean>;
  closing: AbortSignal;
  version: string;
}

function sendProblem(
  reply: FastifyReply,
  code: ProblemCode,
  detail: string,
  extra: Record<string, unknown> = {},
) {
  const p = problem(code, detail, extra);
  return reply.code(p.status).type(PROBLEM_CONTENT_TYPE).send(p);
}

/** A JSON-RPC error with no id, as the transport itself answers session errors. */
function rpcError(reply: FastifyReply, status: number, message: string) {
  return reply.code(status).send({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

const principalOf = (caller: McpCaller) => caller.principal ?? caller.keyId ?? '';

type StoredSession = StoredMcpSession & { id: string };

type Message = { method?: unknown; id?: unknown; params?: { capabilities?: { elicitation?: unknown } } };
const messagesOf = (body: unknown): Message[] =>
  (Array.isArray(body) ? body : [body]).filter((m): m is Message => !!m && typeof m === 'object');

/** Answers to Islet's own elicitations: JSON-RPC responses whose id Islet minted. */
const elicitationAnswers = (body: unknown) => {
  const all = messagesOf(body);
  const answers = all.filter(
    (m) => m.method === undefined && typeof m.id === 'string' && m.id.startsWith(ELICITATION_ID_PREFIX),
  );
  return answers.length > 0 && answers.length === all.length ? answers : undefined;
};

export function mcpRoutes(o: McpRoutesOptions) {
  /**
   * Sends `elicitation/create` on the tool call's own response stream with an id Islet mints, and
   * polls Redis for the answer (it arrives as a new POST, maybe at another replica).
   */
  const elicitOver =
    (transport: StreamableHTTPServerTransport, sessionId: string): Elicit =>
    async (params, relatedRequestId, signal) => {
      const id = `${ELICITATION_ID_PREFIX}${randomUUID()}`;
      // Only an answer to an id Islet minted and still waits for is stored (SET XX on this marker):
      // answers nobody asked for never pile up in Redis.
      await o.storage.elicitations.await(sessionId, id, ELICITATION_TIMEOUT_MS + 60_000);
      await transport.send(
        { jsonrpc: '2.0', id, method: 'elicitation/create', params },
        { relatedRequestId },
      );
      const deadline = Date.now() + ELICITATION_TIMEOUT_MS;
      while (!signal.aborted && Date.now() < deadline) {
        const answer = (await o.storage.elicitations.take(sessionId, id)) as
          | { result?: { action?: unknown; content?: unknown } }
          | undefined;
        if (answer !== undefined) {
          const action = answer.result?.action;
          if (action === 'accept' || action === 'decline' || action === 'cancel')
            return { action, content: answer.result?.content as Record<string, unknown> | undefined };
          return undefined;
        }
        await new Promise((r) => setTimeout(r, ELICITATION_POLL_MS));
      }
      await o.storage.elicitations.drop(sessionId, id);
      return undefined;
    };

  const { settings } = o.storage;

  async function session(request: FastifyRequest, caller: McpCaller): Promise<StoredSession | undefined> {
    const id = request.headers['mcp-session-id'];
    if (typeof id !== 'string' || !/^[\w-]{1,100}$/.test(id)) return undefined;
    const stored = await o.storage.sessions.get(id);
    if (stored?.tenant !== caller.tenantId) return undefined;
    if (stored.principal !== undefined && stored.principal !== principalOf(caller)) return undefined;
    await o.storage.sessions.renew(id, MCP_SESSION_TTL_SECONDS);
    return { ...stored, id };
  }

  return async function mcpPlugin(app: FastifyInstance): Promise<void> {
    // An MCP client that meets a 401 looks for how to authenticate here (RFC 9110 §11.6.1).
    app.addHook('onSend', async (request, reply, payload) => {
      if (reply.statusCode === 401 && request.url.split('?')[0] === '/mcp')
        reply.header('www-authenticate', 'Bearer realm="islet", error="invalid_token"');
      return payload;
    });
    app.post('/mcp', { preHandler: o.authenticate }, async (request, reply) => {
      const caller = o.resolveCaller(request);
      let current: StoredSession | undefined;
      const init = messagesOf(request.body).find((m) => m.method === 'initialize');
      if (init) {
        current = {
          id: randomUUID(),
          tenant: caller.tenantId,
          elicitation: init.params?.capabilities?.elicitation !== undefined,
          principal: principalOf(caller),
        };
        const { id, ...stored } = current;
        await o.storage.sessions.open(id, stored, MCP_SESSION_TTL_SECONDS);
        // Stateless transports do not name sessions: the header is set here and kept by writeHead.
        reply.raw.setHeader('mcp-session-id', id);
      } else {
        if (request.headers['mcp-session-id'] === undefined)
          return rpcError(reply, 400, 'Bad Request: Mcp-Session-Id header is required');
        current = await session(request, caller);
        if (!current) return rpcError(reply, 404, 'Session not found');
        const answers = elicitationAnswers(request.body);
        if (answers) {
          // Whichever replica holds the waiting tool call picks the answer up from Redis.
          for (const m of answers) {
            await o.storage.elicitations.answer(current.id, String(m.id), m);
          }
          return reply.code(202).send();
        }
      }
      const sessionId = current.id;
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const server = createIsletMcpServer({
        host: o.host,
        caller,
        sessionId,
        settings: await settings.get(caller.tenantId),
        requestRuns: o.storage.requestRuns,
        closing: o.closing,
        version: o.version,
        ...(current.elicitation ? { elicit: elicitOver(transport, sessionId) } : {}),
        origin: `${request.protocol}://${request.host}`,
      });
      await server.connect(transport);
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await transport.handleRequest(request.raw, reply.raw, request.body);
    });

    app.get('/mcp', { preHandler: o.authenticate }, async (_request, reply) => {
      reply.header('allow', 'POST, DELETE');
      return rpcError(
        reply,
        405,
        'Method Not Allowed: this server sends everything on the POST response stream',
      );
    });

    app.delete('/mcp', { preHandler: o.authenticate }, async (request, reply) => {
      const found = await session(request, o.resolveCaller(request));
      if (!found) return rpcError(reply, 404, 'Session not found');
      await o.storage.sessions.end(found.id);
      return reply.code(200).send({});
    });

    app.get('/v1/tools', { preHandler: o.authenticate }, async (request, reply) => {
      const q = z.object({ format: z.enum(TOOL_FORMATS).default('mcp') }).safeParse(request.query);
      if (!q.success)
        return sendProblem(reply, 'validation', `format: expected one of ${TOOL_FORMATS.join(', ')}`);
      const tools = resolveTools(await settings.get(o.resolveCaller(request).tenantId));
      return { format: q.data.format, ...toolDefinitions(tools, q.data.format) };
    });

    const tenantParams = z.object({ id: z.string().min(1).max(200) });
    app.get('/v1/admin/tenants/:id/mcp', { preHandler: o.authenticateAdmin }, async (request, reply) => {
      const { id } = tenantParams.parse(request.params);
      if (!(await o.tenantExists(id))) return sendProblem(reply, 'not-found', `no tenant ${id}`);
      const current = await settings.get(id);
      return { ...current, effective: resolveTools(current) };
    });
    app.put('/v1/admin/tenants/:id/mcp', { preHandler: o.authenticateAdmin }, async (request, reply) => {
      const { id } = tenantParams.parse(request.params);
      const parsed = mcpSettingsSchema.safeParse(request.body ?? {});
      if (!parsed.success) {
        const errors = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
        return sendProblem(reply, 'validation', errors.map((e) => `${e.path}: ${e.message}`).join('; '), {
          errors,
        });
      }
      if (!(await o.tenantExists(id))) return sendProblem(reply, 'not-found', `no tenant ${id}`);
      const saved = await settings.set(id, parsed.data);
      return { ...saved, effective: resolveTools(saved) };
    });
  };
}
