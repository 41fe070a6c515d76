/**
 * What the OpenAPI document says about each route the gateway registers, keyed `METHOD /url` as
 * fastify spells the URL. Request schemas are the zod schemas the routes validate with (imported,
 * never copied); the document's paths come from the registered routes (route-catalog.ts), so a
 * route without an entry here is missing from the document, which the OpenAPI test refuses.
 */
import type { Scope } from '@islet/core';
import { MAX_LIST_LIMIT } from '@islet/kernel-sandbox';
import { mcpSettingsSchema, TOOL_FORMATS } from '@islet/mcp';
import { codeRunRecordSchema, type ProblemCode, skillRequestSchema } from '@islet/protocol';
import { runPolicySchema } from '@islet/runs';
import { z } from 'zod';
import { connectionInputSchema, rotateSchema } from '../connections.ts';
import { recordQuerySchema } from '../record-bounds.ts';
import { createKeySchema, createTenantSchema } from '../routes/admin.ts';
import { codeApiQuerySchema } from '../routes/code-api.ts';
import { connectionPatchSchema } from '../routes/connections.ts';
import { decisionAnswerSchema } from '../routes/decisions.ts';
import { clientAnswerSchema, sessionRunsQuerySchema } from '../routes/runs.ts';
import { settingsPatchSchema } from '../routes/settings.ts';
import * as r from './response-schemas.ts';
import { runRequestAccepts, runRequestSchema } from './run-request-doc.ts';

export interface ResponseDoc {
  description: string;
  /** JSON schema of an application/json answer. */
  schema?: z.ZodType;
  /** Another media type (SSE, bytes, text); its body is described as a string. */
  contentType?: string;
  headers?: Record<string, string>;
}

export interface OperationDoc {
  summary: string;
  description?: string;
  tag: 'runs' | 'decisions' | 'files' | 'apps' | 'admin' | 'platform' | 'mcp' | 'internal' | 'console';
  /**
   * Who may call: scopes the API key needs (`[]`: any valid key), `internal` (the runner channel's
   * token), or absent (no credentials).
   */
  auth?: readonly Scope[] | 'internal';
  query?: z.ZodObject;
  headers?: Array<{ name: string; description: string }>;
  body?: {
    schema: z.ZodType;
    /** Shown by /docs as the try-it-out request; the OpenAPI test sends it through `accepts`. */
    example: unknown;
    /** The route's own check of a body, when it is more than `schema` (the run_code refusals). */
    accepts?: (body: unknown) => string | undefined;
    contentType?: string;
  };
  responses: Record<number, ResponseDoc>;
  /** Refusals this operation gives beyond the ones its auth, body, query and path imply. */
  errors?: ProblemCode[];
}

const idempotencyKey = {
  name: 'Idempotency-Key',
  description:
    'The same key with the same body answers the run it started (idempotent-replayed: true), never a second run; with another body 409 idempotency-conflict.',
};
const preferWait = {
  name: 'Prefer',
  description:
    '`wait=N`: hold the answer up to N seconds (capped by the deployment) and answer 200 with the final record if the run ends in time.',
};
const lastEventId = {
  name: 'Last-Event-ID',
  description: 'Resume after this event id (also `?lastEventId=`).',
};
/** The skill's own schema plus the two fields the gateway reads around it. */
export const skillRequestDocSchema = skillRequestSchema.extend({
  sessionId: z
    .string()
    .optional()
    .describe("The program's working directory is this session's workspace (else a scratch dir)."),
  sandbox_permissions: z
    .enum(['read-only', 'workspace-write'])
    .optional()
    .describe('Default workspace-write. danger-full-access needs an approved run (POST /v1/runs).'),
});

const run = (description: string): ResponseDoc => ({ description, schema: codeRunRecordSchema });
const sse = (description: string): ResponseDoc => ({ description, contentType: 'text/event-stream' });

export const OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/runs': {
    tag: 'runs',
    summary: 'Submit a run',
    description:
      'Only code and description are required; style run_code (default) or code-mode. The answer is the run record; `Location: /v1/code-runs/{id}`.',
    auth: ['apps.use'],
    headers: [idempotencyKey, preferWait],
    body: {
      schema: runRequestSchema,
      accepts: runRequestAccepts,
      example: {
        code: 'console.log("hello from the sandbox"); return 6 * 7',
        description: 'Print a greeting and multiply',
      },
    },
    responses: {
      200: run('The run ended within Prefer: wait'),
      202: run('Accepted; still Running or Waiting (follow /v1/code-runs/{id}/events)'),
    },
    errors: ['idempotency-conflict', 'quota-exceeded'],
  },
  'GET /v1/code-runs/:id': {
    tag: 'runs',
    summary: 'Read a code run',
    description:
      'With `maxLogBytes` the record keeps the first and last log lines within that many bytes, says what it left out in `logsOmitted` {lines, bytes, after, totalLines, totalBytes}, and cuts `text` alike (`textOmittedChars`); the full output is `GET /v1/code-runs/{id}/logs`.',
    auth: ['apps.use'],
    query: recordQuerySchema,
    responses: { 200: run('The record') },
  },
  'GET /v1/code-runs/:id/logs': {
    tag: 'runs',
    summary: "A run's full output as text",
    description:
      'One printed line per line (`[level] ` before any level but log), streamed; empty until the run ends.',
    auth: ['apps.use'],
    responses: { 200: { description: 'text/plain' } },
  },
  'GET /v1/code-runs/:id/events': {
    tag: 'runs',
    summary: 'Server-Sent Events of a run',
    description:
      'Each event has `id` (the stream entry), `event` (status, call, call.requested, decision.needed, decision.answered, end…) and JSON `data`; the stream ends after `end`. Resumable with Last-Event-ID on any gateway.',
    auth: ['apps.use'],
    headers: [lastEventId],
    responses: { 200: sse('text/event-stream until the `end` event') },
  },
  'POST /v1/code-runs/:id/cancel': {
    tag: 'runs',
    summary: 'Cancel a run wherever it executes',
    auth: ['apps.use'],
    responses: { 202: run('The record after the cancel was taken') },
    errors: ['run-finished'],
  },
  'POST /v1/code-runs/:id/calls/:index/result': {
    tag: 'runs',
    summary: 'Answer a client-connection call',
    description:
      '{"result": …}, {"error": {"message": …, "reason"?: …}} (the program gets AppCallFailed), or {"inputRequired": {"message": "<non-empty text>"}} (the program gets AppInputRequired with details.operationId).',
    auth: ['apps.use'],
    body: { schema: clientAnswerSchema, example: { result: { ok: true } } },
    responses: { 202: { description: 'Taken; the program continues', schema: r.callAcceptedSchema } },
    errors: ['call-not-pending'],
  },
  'GET /v1/runs': {
    tag: 'runs',
    summary: "List the tenant's runs, newest first",
    description:
      'Filters limit (1-200), cursor, status (repeatable), sessionId, principal, since/until, q, style (run_code, code-mode, skill), tenant (platform.admin). Summaries, no code or logs; unknown parameters and malformed cursors are 400 naming the parameter.',
    auth: ['apps.use', 'sessions.read'],
    responses: { 200: { description: 'One page' } },
  },
  'GET /v1/sessions': {
    tag: 'runs',
    summary: "List the tenant's sessions by last activity",
    description: 'limit, cursor, principal, since/until, tenant (platform.admin); run counts by status.',
    auth: ['apps.use', 'sessions.read'],
    responses: { 200: { description: 'One page' } },
  },
  'GET /v1/usage': {
    tag: 'runs',
    summary: 'Usage per tenant and UTC day',
    description:
      'from, to (YYYY-MM-DD); sessions.admin for the own tenant, platform.admin for all or `tenant`.',
    auth: [],
    responses: { 200: { description: 'Usage per day' } },
  },
  'GET /v1/health': {
    tag: 'runs',
    summary: 'Health over the last hour, 10 s buckets',
    description:
      'minutes (1-60, default 60). Runs ended per second and by status, p50/p99 latency (creation to end), failures by kind, queue depth, runner slots busy, decisions pending; gauges are null where no gateway sampled. sessions.admin for the own tenant; platform.admin for the whole cluster (queue depth and slots per mode) or `tenant`.',
    auth: [],
    responses: { 200: { description: 'Series, one value per bucket of `t`' } },
  },
  'GET /v1/events': {
    tag: 'runs',
    summary: "The tenant's live feed (SSE): runs and decisions",
    description: 'Events run, decision (decisions scope), ready, key-revoked; resumable with Last-Event-ID.',
    auth: ['apps.use', 'sessions.read'],
    headers: [lastEventId],
    responses: { 200: sse('text/event-stream; heartbeats while idle') },
  },
  'GET /v1/sessions/:sessionId/code-runs': {
    tag: 'runs',
    summary: "List a session's runs, newest first",
    description:
      'A session belongs to the principal that opened it: other principals see it empty unless their key has sessions.admin.',
    auth: ['apps.use', 'sessions.read'],
    query: sessionRunsQuerySchema,
    responses: { 200: { description: 'One page', schema: r.codeRunPageSchema } },
  },
  'GET /v1/sessions/:sessionId/events': {
    tag: 'runs',
    summary: 'Server-Sent Events of a whole session',
    description:
      'A `run` event {id, status, reason, createdAt, updatedAt, failure?} per latest run, then one whenever a run appears or changes.',
    auth: ['sessions.read'],
    responses: { 200: sse('text/event-stream; heartbeats while idle') },
  },
  'GET /v1/decisions': {
    tag: 'decisions',
    summary: "The tenant's pending decisions",
    auth: ['decisions'],
    responses: {
      200: { description: 'Pending decisions, Code Mode request shape', schema: r.decisionListSchema },
    },
  },
  'POST /v1/code-runs/:id/decisions': {
    tag: 'decisions',
    summary: 'Answer a decision once',
    description: 'index -1 = the run’s wider-access request; a second answer is 409.',
    auth: ['decisions'],
    body: { schema: decisionAnswerSchema, example: { index: -1, allow: true } },
    responses: { 200: { description: 'The decision as answered', schema: r.decisionSchema } },
    errors: ['conflict', 'four-eyes'],
  },
  'GET /v1/sessions/:id/files': {
    tag: 'files',
    summary: "List a session's workspace files, one page in path order",
    description: 'Regular files only (symlinks, FIFOs, sockets, devices are not listed).',
    auth: ['apps.use'],
    query: z.object({
      prefix: z.string().optional().describe('A directory (everything under it) or a file'),
      limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).optional(),
      cursor: z.string().optional().describe('nextCursor of the previous page (opaque)'),
    }),
    responses: { 200: { description: 'One page', schema: r.fileListSchema } },
  },
  'PUT /v1/sessions/:id/files/*': {
    tag: 'files',
    summary: 'Write a workspace file',
    description:
      'The body is the raw bytes (≤ 10 MiB). Over the workspace limits (100 MiB, 1000 files) 409 conflict, reason workspace-full.',
    auth: ['apps.use'],
    body: {
      schema: z.string().describe('the file’s bytes'),
      contentType: 'application/octet-stream',
      example: 'hello\n',
    },
    responses: { 201: { description: 'Written', schema: r.fileWrittenSchema } },
    errors: ['conflict'],
  },
  'GET /v1/sessions/:id/files/*': {
    tag: 'files',
    summary: 'Read a workspace file',
    description:
      'A FIFO, socket or device is 409 unsupported-file-type; a symlink is 400 (outside-workspace).',
    auth: ['apps.use'],
    responses: { 200: { description: 'The bytes', contentType: 'application/octet-stream' } },
    errors: ['unsupported-file-type'],
  },
  'DELETE /v1/sessions/:id/files/*': {
    tag: 'files',
    summary: 'Delete a workspace file',
    auth: ['apps.use'],
    responses: { 204: { description: 'Deleted' } },
  },
  'POST /v1/skills/run_code': {
    tag: 'files',
    summary: 'Run a python, javascript or bash program (the run_code skill)',
    description:
      "On the mode's runner pool, under its kernel profile, in the session's workspace when sessionId is given.",
    auth: ['apps.use'],
    body: {
      schema: skillRequestDocSchema,
      accepts: (b) => (skillRequestSchema.safeParse(b).success ? undefined : 'refused'),
      example: { language: 'python', code: 'print(6 * 7)' },
    },
    responses: {
      200: { description: 'The program ended (successfully or not)', schema: r.skillResultSchema },
    },
  },
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

/** Registered routes the document leaves out, by URL prefix, and why. */
export const UNDOCUMENTED: ReadonlyArray<{ prefix: string; why: string }> = [
  { prefix: '/docs', why: 'Swagger UI, the interactive page rendering this document' },
  {
    prefix: '/queues',
    why: "bull-board's queue board and its private API (platform admins, behind a cookie)",
  },
];
