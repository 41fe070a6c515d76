/**
 * The OpenAPI entries of the routes an operator and an App's owner use — connections, the code API
 * and tools, MCP, platform settings, tenants and keys, health, metrics, the runner's internal call
 * routes and the console — kept apart from the run routes' entries (operations.ts), which spreads
 * them into OPERATIONS.
 */
import { mcpSettingsSchema, TOOL_FORMATS } from '@islet/mcp';
import { runPolicySchema } from '@islet/runs';
import { z } from 'zod';
import { connectionInputSchema, rotateSchema } from '../connections.ts';
import { createKeySchema, createTenantSchema } from '../routes/admin.ts';
import { codeApiQuerySchema } from '../routes/code-api.ts';
import { connectionPatchSchema } from '../routes/connections.ts';
import { settingsPatchSchema } from '../routes/settings.ts';
import type { OperationDoc } from './operations.ts';
import * as r from './response-schemas.ts';

export const PLATFORM_OPERATIONS: Record<string, OperationDoc> = {
  'GET /v1/connections': {
    tag: 'apps',
    summary: 'List connections',
    auth: ['apps.use'],
    responses: { 200: { description: 'The tenant’s connections', schema: r.connectionListSchema } },
  },
  'POST /v1/connections': {
    tag: 'apps',
    summary: 'Register a connection (an App)',
    description:
      'The slug `files` is 400 reserved-connection-name; a name the engine refuses as a binding name is 400 invalid-binding-name; a slug clash is 409 conflict; an mcp server that cannot be listed is 502 app-unreachable.',
    auth: ['apps.use'],
    body: {
      schema: connectionInputSchema,
      example: {
        name: 'Weather',
        kind: 'http',
        url: 'https://weather.example.com/islet',
        tools: [
          {
            name: 'forecast',
            description: 'Forecast for a city',
            inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        ],
      },
    },
    responses: {
      201: {
        description:
          'Registered; Location: /v1/connections/{id}. An http connection’s signingSecret is shown here once.',
        schema: r.createdConnectionSchema,
      },
    },
    errors: ['reserved-connection-name', 'invalid-binding-name', 'conflict', 'app-unreachable'],
  },
  'POST /v1/connections/:id/signing-secret/rotate': {
    tag: 'apps',
    summary: 'Rotate an http connection’s Standard Webhooks signing secret',
    description:
      'The new secret is returned once; the previous one keeps signing (both signatures sent) for previousSecretExpiresInSeconds (default 86400, 0: stops at once). See "Write an App" above.',
    auth: ['apps.use'],
    body: { schema: rotateSchema, example: { previousSecretExpiresInSeconds: 3600 } },
    responses: { 200: { description: 'The new secret (shown once)', schema: r.rotatedSecretSchema } },
  },
  'GET /v1/connections/:id': {
    tag: 'apps',
    summary: 'Read a connection',
    auth: ['apps.use'],
    responses: { 200: { description: 'The connection', schema: r.connectionViewSchema } },
  },
  'PATCH /v1/connections/:id': {
    tag: 'apps',
    summary: 'Edit a connection in place',
    description:
      "`url`, the `headers` of an http or mcp connection (replaced whole; sealed, never returned), and named tools' `policy` (allow / ask / deny) or `description`. The name stays: it is the binding prefix programs call.",
    auth: ['apps.use'],
    body: { schema: connectionPatchSchema, example: { tools: [{ name: 'send_email', policy: 'ask' }] } },
    responses: { 200: { description: 'The connection as changed', schema: r.connectionViewSchema } },
  },
  'DELETE /v1/connections/:id': {
    tag: 'apps',
    summary: 'Remove a connection',
    auth: ['apps.use'],
    responses: { 204: { description: 'Removed' } },
  },
  'GET /v1/code-api': {
    tag: 'apps',
    summary: 'TypeScript declarations of the bindings a run sees',
    description:
      'The Apps a run without `connections` sees, plus for run_code the built-in files.read/write/list/remove. `Accept: application/typescript` answers the declarations alone.',
    auth: ['apps.use'],
    query: codeApiQuerySchema,
    responses: { 200: { description: 'Declarations and bindings', schema: r.codeApiSchema } },
  },
  'GET /v1/tools': {
    tag: 'mcp',
    summary: "The caller's tools as definitions, generated from the same zod schemas as /mcp",
    auth: ['apps.use'],
    query: z.object({ format: z.enum(TOOL_FORMATS).optional() }),
    responses: { 200: { description: 'Tool definitions in the format asked for', schema: r.toolsSchema } },
  },
  'POST /mcp': {
    tag: 'mcp',
    summary: 'MCP over Streamable HTTP',
    description:
      'initialize opens a session (Mcp-Session-Id, also the Islet session of its runs); tools/list, tools/call; notifications/cancelled cancels the run.',
    auth: ['apps.use'],
    body: {
      schema: z.looseObject({ jsonrpc: z.literal('2.0'), method: z.string() }),
      example: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'docs', version: '1' },
        },
      },
    },
    responses: {
      200: { description: 'JSON-RPC answer (JSON or an event stream)', schema: z.looseObject({}) },
    },
  },
  'GET /mcp': {
    tag: 'mcp',
    summary: 'No server-initiated stream',
    auth: ['apps.use'],
    responses: { 405: { description: 'Everything rides on the POST response stream' } },
    errors: ['method-not-allowed'],
  },
  'DELETE /mcp': {
    tag: 'mcp',
    summary: 'End the MCP session (Mcp-Session-Id)',
    auth: ['apps.use'],
    responses: { 200: { description: 'Ended' } },
  },
  'GET /v1/platform/settings': {
    tag: 'platform',
    summary: 'Platform settings',
    auth: [],
    responses: { 200: { description: 'The settings and their version', schema: r.platformSettingsSchema } },
  },
  'PATCH /v1/platform/settings': {
    tag: 'platform',
    summary: 'Change settings',
    description:
      '409 version-conflict when expectedVersion is stale (the answer carries the current settings).',
    auth: ['platform.admin'],
    body: { schema: settingsPatchSchema, example: { expectedVersion: 1, codeMode: { enabled: true } } },
    responses: { 200: { description: 'The settings as saved', schema: r.platformSettingsSchema } },
    errors: ['version-conflict'],
  },
  'GET /v1/admin/tenants': {
    tag: 'admin',
    summary: 'List tenants',
    auth: ['platform.admin'],
    responses: { 200: { description: 'Every tenant', schema: r.tenantListSchema } },
  },
  'POST /v1/admin/tenants': {
    tag: 'admin',
    summary: 'Create a tenant',
    auth: ['platform.admin'],
    body: { schema: createTenantSchema, example: { name: 'Acme' } },
    responses: { 201: { description: 'Created', schema: r.tenantSchema } },
    errors: ['conflict'],
  },
  'POST /v1/admin/tenants/:id/keys': {
    tag: 'admin',
    summary: 'Create an API key',
    description: 'The key belongs to the principal (default: itself); it is shown once.',
    auth: ['platform.admin'],
    body: { schema: createKeySchema, example: { scopes: ['apps.use', 'sessions.read'], principal: 'alice' } },
    responses: { 201: { description: 'Created', schema: r.createdKeySchema } },
  },
  'GET /v1/admin/tenants/:id/keys': {
    tag: 'admin',
    summary: "List a tenant's API keys",
    description: 'id, prefix, scopes, principal, created, lastUsed, expiresAt (ms or null); never a secret.',
    auth: ['platform.admin'],
    responses: { 200: { description: 'The keys' } },
  },
  'DELETE /v1/admin/tenants/:id/keys/:keyId': {
    tag: 'admin',
    summary: 'Revoke an API key',
    description: 'Refused at once on every gateway; its open event streams end with `key-revoked`.',
    auth: ['platform.admin'],
    responses: { 204: { description: 'Revoked' } },
  },
  'POST /v1/admin/tenants/:id/keys/:keyId/rotate': {
    tag: 'admin',
    summary: 'Rotate an API key',
    description:
      '{graceSeconds?}: a new secret for the same key id; the old one works through the grace (default 0).',
    auth: ['platform.admin'],
    responses: { 201: { description: 'The new secret' } },
  },
  'GET /v1/admin/tenants/:id/run-policy': {
    tag: 'admin',
    summary: "A tenant's run policy and the effective rules",
    auth: ['platform.admin'],
    responses: { 200: { description: 'The policy', schema: r.policyViewSchema } },
  },
  'PUT /v1/admin/tenants/:id/run-policy': {
    tag: 'admin',
    summary: "Set a tenant's run policy",
    auth: ['platform.admin'],
    body: { schema: runPolicySchema, example: { style: 'run_code', fourEyes: false } },
    responses: { 200: { description: 'The policy as saved', schema: r.policyViewSchema } },
  },
  'GET /v1/admin/tenants/:id/mcp': {
    tag: 'admin',
    summary: "A tenant's MCP tools and the effective list",
    auth: ['platform.admin'],
    responses: { 200: { description: 'The settings', schema: r.policyViewSchema } },
  },
  'PUT /v1/admin/tenants/:id/mcp': {
    tag: 'admin',
    summary: "Set a tenant's MCP tools",
    auth: ['platform.admin'],
    body: { schema: mcpSettingsSchema, example: { tools: {} } },
    responses: { 200: { description: 'The settings as saved', schema: r.policyViewSchema } },
  },
  'GET /healthz': {
    tag: 'platform',
    summary: 'Liveness',
    responses: { 200: { description: 'ok', schema: r.statusSchema } },
  },
  'GET /readyz': {
    tag: 'platform',
    summary: 'Readiness (Redis reachable)',
    responses: { 200: { description: 'ready', schema: r.statusSchema } },
    errors: ['unavailable'],
  },
  'GET /metrics': {
    tag: 'platform',
    summary: 'Prometheus metrics',
    responses: { 200: { description: 'Text exposition format', contentType: 'text/plain' } },
  },
  'GET /openapi.json': {
    tag: 'platform',
    summary: 'This description',
    responses: { 200: { description: 'OpenAPI 3.1', schema: z.looseObject({ openapi: z.string() }) } },
  },
  'POST /internal/v1/code-runs/:id/calls': {
    tag: 'internal',
    summary: 'The runner → gateway binding-call channel',
    description:
      '{attempt, index, binding, argsJson, takeover?} → {outcome, deliverySeq?}. Bearer ISLET_INTERNAL_TOKEN; served on ISLET_INTERNAL_PORT alone when that is set.',
    auth: 'internal',
    body: {
      schema: z.looseObject({
        attempt: z.number(),
        index: z.number(),
        binding: z.string(),
        argsJson: z.string(),
      }),
      example: { attempt: 1, index: 0, binding: 'weather.forecast', argsJson: '{"city":"Oslo"}' },
    },
    responses: {
      200: { description: 'The journaled outcome', schema: z.looseObject({ outcome: z.unknown() }) },
    },
    errors: ['conflict', 'run-finished'],
  },
  'POST /internal/v1/code-runs/:id/call-batch': {
    tag: 'internal',
    summary: 'The calls an execution made together, in one request',
    description:
      '{attempt, calls: [{index, binding, argsJson}]} (1 to 1000) → one NDJSON line per call as soon as it is journaled.',
    auth: 'internal',
    body: {
      schema: z.looseObject({ attempt: z.number(), calls: z.array(z.looseObject({ index: z.number() })) }),
      example: {
        attempt: 1,
        calls: [{ index: 0, binding: 'weather.forecast', argsJson: '{"city":"Oslo"}' }],
      },
    },
    responses: { 200: { description: 'One line per call', contentType: 'application/x-ndjson' } },
  },
  'GET /console': {
    tag: 'console',
    summary: 'The web console (redirects to /console/)',
    responses: { 302: { description: 'Redirect' } },
  },
  'GET /console/*': {
    tag: 'console',
    summary: 'The web console and its assets (strict Content-Security-Policy)',
    responses: { 200: { description: 'HTML, JS, CSS', contentType: 'text/html' } },
  },
  'POST /console/board-session': {
    tag: 'console',
    summary: 'A 15-minute cookie scoped to /queues that opens the queue board',
    auth: ['platform.admin'],
    responses: { 204: { description: 'Cookie set' } },
  },
};
