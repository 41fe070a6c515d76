import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import {
  DEFAULT_PREVIOUS_SECRET_TTL_SECONDS,
  openSigning,
  reservedAppHeader,
  type SigningState,
  signingSecrets,
} from '../app-signing.ts';
import { callerOf } from '../auth.ts';
import { bindingsOf, connectionInputSchema, rotateSchema } from '../connections.ts';
import { HttpProblem, validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

const CONNECTION_FIELD_HINTS: Readonly<Record<string, string>> = {
  secret: 'Islet makes the signing secret: it is in this answer (signingSecret), once',
  signingSecret: 'Islet makes the signing secret: it is in this answer (signingSecret), once',
};

function signingView(state: SigningState) {
  const now = Date.now();
  return {
    scheme: 'standard-webhooks',
    secrets: signingSecrets(state, now).length,
    ...(state.previous && state.previous.expiresAt > now
      ? { previousSecretExpiresAt: state.previous.expiresAt }
      : {}),
  };
}

/**
 * What `PATCH /v1/connections/:id` may change: the App's url, an `mcp` server's headers (replaced
 * whole, sealed, never shown), and each named tool's policy or description. The name stays: it is
 * the binding prefix programs already call.
 */
export const connectionPatchSchema = z
  .object({
    url: z.string().url().optional(),
    headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,100}$/), z.string().max(8000)).optional(),
    tools: z
      .array(
        z
          .object({
            name: z.string().min(1).max(100),
            policy: z.enum(['allow', 'ask', 'deny']).optional(),
            description: z.string().max(2000).optional(),
          })
          .strict(),
      )
      .max(200)
      .optional(),
  })
  .strict();

export function connectionsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  const view = ({
    sealedHeaders,
    sealedSigning,
    ...c
  }: Awaited<ReturnType<typeof deps.connections.get>> & object) => ({
    ...c,
    // Which header names the connection sends; their values stay sealed.
    ...(sealedHeaders
      ? { headers: Object.keys(JSON.parse(deps.sealer.open(sealedHeaders)) as object).sort() }
      : {}),
    // That requests are signed, and until when a rotated-out secret still signs; never a secret.
    ...(sealedSigning ? { signing: signingView(openSigning(deps.sealer, sealedSigning)) } : {}),
    bindings: bindingsOf(c).map((b) => `apps.${b.binding}`),
  });
  return async (app) => {
    app.post('/v1/connections', { preHandler: auth.requireScopes('apps.use') }, async (request, reply) => {
      const parsed = connectionInputSchema.safeParse(request.body);
      if (!parsed.success)
        throw validationProblem(parsed.error, '', connectionInputSchema, CONNECTION_FIELD_HINTS);
      const tenant = callerOf(request).tenantId;
      // Before an MCP server is contacted on the tenant's behalf (the store checks again, atomically).
      const max = deps.config.ISLET_TENANT_MAX_CONNECTIONS;
      if ((await deps.connections.list(tenant)).length >= max)
        throw new HttpProblem(
          'connection-quota-exceeded',
          `the tenant has ${max} connections, the most it may have (ISLET_TENANT_MAX_CONNECTIONS); delete one first`,
        );
      let input = parsed.data;
      if (input.kind === 'mcp') {
        // The server says what it offers; `tools` in the request only set per-tool policies.
        try {
          input = { ...input, ...(await ctx.mcpApps.discover(input)) };
        } catch (err) {
          throw new HttpProblem(
            'app-unreachable',
            `the MCP server could not be listed: ${(err as Error).message}`,
          );
        }
      }
      const res = await deps.connections.create(tenant, input, ctx.mcpApps.sealHeaders(parsed.data.headers));
      if (!res.ok) throw new HttpProblem(res.code, res.detail);
      if (res.connection.kind === 'mcp') ctx.mcpApps.watch(tenant, res.connection);
      reply.header('location', `/v1/connections/${res.connection.id}`);
      // The signing secret is shown here and after a rotation, never again.
      return reply.code(201).send({
        ...view(res.connection),
        ...(res.signingSecret ? { signingSecret: res.signingSecret } : {}),
      });
    });
    app.post(
      '/v1/connections/:id/signing-secret/rotate',
      { preHandler: auth.requireScopes('apps.use') },
      async (request) => {
        const { id } = idParams.parse(request.params);
        const parsed = rotateSchema.safeParse(request.body ?? {});
        if (!parsed.success) throw validationProblem(parsed.error, '', rotateSchema);
        const ttl = parsed.data.previousSecretExpiresInSeconds ?? DEFAULT_PREVIOUS_SECRET_TTL_SECONDS;
        const rotated = await deps.connections.rotateSigningSecret(callerOf(request).tenantId, id, ttl);
        if (!rotated) throw new HttpProblem('not-found', `no http connection ${id}`);
        return rotated;
      },
    );
    app.get('/v1/connections', { preHandler: auth.requireScopes('apps.use') }, async (request) => {
      const items = await deps.connections.list(callerOf(request).tenantId);
      return { items: items.map(view) };
    });
    app.get('/v1/connections/:id', { preHandler: auth.requireScopes('apps.use') }, async (request) => {
      const { id } = idParams.parse(request.params);
      const c = await deps.connections.get(callerOf(request).tenantId, id);
      if (!c) throw new HttpProblem('not-found', `no connection ${id}`);
      return view(c);
    });
    app.patch('/v1/connections/:id', { preHandler: auth.requireScopes('apps.use') }, async (request) => {
      const { id } = idParams.parse(request.params);
      const parsed = connectionPatchSchema.safeParse(request.body);
      if (!parsed.success) throw validationProblem(parsed.error);
      const tenant = callerOf(request).tenantId;
      const current = await deps.connections.get(tenant, id);
      if (!current) throw new HttpProblem('not-found', `no connection ${id}`);
      const patch = parsed.data;
      const kind = current.kind;
      if (patch.url !== undefined && kind === 'client')
        throw new HttpProblem('validation', 'a client connection has no url');
      if (patch.url !== undefined && !/^https?:/.test(patch.url))
        throw new HttpProblem('validation', 'the url must be http(s)');
      if (patch.headers !== undefined && kind === 'client')
        throw new HttpProblem(
          'validation',
          'headers are only for http and mcp connections (a client connection sends nothing)',
        );
      if (kind === 'http' && Object.keys(patch.headers ?? {}).some(reservedAppHeader))
        throw new HttpProblem(
          'validation',
          'headers may not set content-type, content-length, host, connection, transfer-encoding, idempotency-key, webhook-* or x-islet-* (Islet sends those)',
        );
      const tools = current.tools.map((t) => ({ ...t }));
      for (const change of patch.tools ?? []) {
        const tool = tools.find((t) => t.name === change.name);
        if (!tool) throw new HttpProblem('validation', `connection ${id} has no tool ${change.name}`);
        if (change.policy) tool.policy = change.policy;
        if (change.description !== undefined) tool.description = change.description;
      }
      const { sealedHeaders: kept, ...rest } = current;
      // Headers given replace the old ones whole (an empty object clears them).
      const sealedHeaders = patch.headers !== undefined ? ctx.mcpApps.sealHeaders(patch.headers) : kept;
      const next = {
        ...rest,
        tools,
        ...(patch.url !== undefined ? { url: patch.url } : {}),
        ...(sealedHeaders ? { sealedHeaders } : {}),
      };
      if (!(await deps.connections.replace(tenant, next)))
        throw new HttpProblem('not-found', `no connection ${id}`);
      if (kind === 'mcp' && (patch.url !== undefined || patch.headers !== undefined)) {
        await ctx.mcpApps.unwatch(tenant, id);
        ctx.mcpApps.watch(tenant, next);
      }
      return view(next);
    });
    app.delete(
      '/v1/connections/:id',
      { preHandler: auth.requireScopes('apps.use') },
      async (request, reply) => {
        const { id } = idParams.parse(request.params);
        if (!(await deps.connections.remove(callerOf(request).tenantId, id)))
          throw new HttpProblem('not-found', `no connection ${id}`);
        await ctx.mcpApps.unwatch(callerOf(request).tenantId, id);
        return reply.code(204).send();
      },
    );
  };
}
