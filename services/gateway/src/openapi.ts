/** The OpenAPI 3.1 document served at `/openapi.json`; body schemas come from the zod schemas the routes use. */

import { MAX_LIST_LIMIT, skillRequestSchema } from '@islet/kernel-sandbox';
import { mcpSettingsSchema } from '@islet/mcp';
import { codeRunRecordSchema, PROBLEM_BASE, SANDBOX_MODES } from '@islet/protocol';
import { runPolicySchema } from '@islet/runs';
import { z } from 'zod';
import { connectionInputSchema } from './connections.ts';
import { decisionAnswerSchema } from './routes/decisions.ts';
import { settingsPatchSchema } from './routes/settings.ts';
import { runPlacementSchema } from './run-request.ts';
import { RUN_STYLE_RULES, runStyleTableMarkdown } from './run-styles.ts';

const runRequest = z
  .object({
    code: z.string().describe('The program: the body of an async function.'),
    description: z.string().describe('Five to ten words in active voice.'),
    timeoutMs: z
      .number()
      .positive()
      .nullable()
      .optional()
      .describe(
        'run_code only: time budget in ms (default 120000, capped at the ceiling). null = no deadline, for a principal with the workflows scope.',
      ),
    sandbox_permissions: z
      .enum(SANDBOX_MODES)
      .optional()
      .describe("run_code only: a mode wider than the run's (read-only); asks for a decision first."),
    justification: z
      .string()
      .optional()
      .describe('With sandbox_permissions: one sentence shown before the run.'),
    ...runPlacementSchema.shape,
    style: runPlacementSchema.shape.style.describe(
      "run_code (document 000) or code-mode (document 003); default: the tenant's run policy (run_code).",
    ),
    sessionId: runPlacementSchema.shape.sessionId.describe('Generated when absent.'),
    turnId: runPlacementSchema.shape.turnId.describe('Generated when absent.'),
    callId: runPlacementSchema.shape.callId.describe('Generated when absent.'),
    connections: runPlacementSchema.shape.connections.describe(
      'Connection ids whose Apps the program may call; absent: every App of the tenant.',
    ),
  })
  .describe(`A run. The style decides which document's rules apply:\n\n${runStyleTableMarkdown()}`);

const skillRequest = skillRequestSchema.extend({
  sessionId: z
    .string()
    .optional()
    .describe("The program's working directory is this session's workspace (else a scratch dir)."),
  sandbox_permissions: z
    .enum(['read-only', 'workspace-write'])
    .optional()
    .describe('Default workspace-write. danger-full-access needs an approved run (POST /v1/runs).'),
});

const skillResult = z.object({
  success: z.boolean().describe('True if the program exited 0'),
  output: z
    .string()
    .describe('Captured stdout: the first 1 MiB (the program is not stopped for printing more)'),
  error: z.string().describe('Captured stderr (or error message)'),
  exitCode: z.number().int().describe('Process exit code (124: timeout, 127: interpreter missing)'),
  language: z.enum(['python', 'javascript', 'bash']),
});

const js = (s: z.ZodType) =>
  z.toJSONSchema(s, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>;

export function openApiDocument() {
  const problem = {
    description: 'problem+json',
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
  const record = { content: { 'application/json': { schema: { $ref: '#/components/schemas/CodeRun' } } } };
  const bearer = [{ apiKey: [] }];
  const op = (summary: string, extra: Record<string, unknown> = {}) => ({
    summary,
    security: bearer,
    responses: { default: problem, ...((extra.responses as object) ?? {}) },
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'responses')),
  });
  const json = (ref: string) => ({
    required: true,
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Islet',
      version: '0.1.0',
      description: `Code Mode execution cluster. Errors are RFC 9457 problem+json; \`type\` URIs start with ${PROBLEM_BASE}.\n\n## run_code vs Code Mode\n\n${runStyleTableMarkdown()}`,
    },
    'x-run-styles': RUN_STYLE_RULES,
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } },
      schemas: {
        RunRequest: js(runRequest),
        CodeRun: js(codeRunRecordSchema),
        Connection: js(connectionInputSchema),
        DecisionAnswer: js(decisionAnswerSchema),
        RunPolicy: js(runPolicySchema),
        McpSettings: js(mcpSettingsSchema),
        SkillRequest: js(skillRequest),
        SkillResult: js(skillResult),
        SettingsPatch: js(settingsPatchSchema),
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            code: { type: 'string' },
          },
        },
      },
    },
    paths: {
      '/v1/runs': {
        get: op(
          "List the tenant's runs newest first (apps.use + sessions.read): limit (1-200, default 50), cursor (opaque nextCursor), status (repeatable or comma-separated), sessionId, principal, since/until (createdAt, ms or ISO 8601), q (description substring), style (run_code, code-mode, skill); platform.admin may pass tenant. Items are summaries (id, status, description, sessionId, principal, style, mode, createdAt, endedAt, kind). A principal sees its own runs; sessions.admin sees the tenant's. Unknown parameters and malformed cursors are 400 naming the parameter.",
        ),
        post: op(
          'Submit a run: only code and description are required; style run_code (default) or code-mode. Headers: Idempotency-Key, Prefer: wait=N.',
          {
            requestBody: json('RunRequest'),
            responses: {
              202: { description: 'Accepted; Location: /v1/code-runs/{id}', ...record },
              200: { description: 'Finished within Prefer: wait', ...record },
            },
          },
        ),
      },
      '/v1/code-runs/{id}': {
        get: op('Read a code run', { responses: { 200: { description: 'The record', ...record } } }),
      },
      '/v1/code-runs/{id}/events': { get: op('Server-Sent Events of a run; resumable with Last-Event-ID') },
      '/v1/code-runs/{id}/cancel': { post: op('Cancel a run wherever it executes') },
      '/v1/code-runs/{id}/calls/{index}/result': {
        post: op(
          'Answer a client-connection call: {"result": …}, {"error": {"message": …, "reason"?: …}} (the program gets AppCallFailed), or {"inputRequired": {"message": "<non-empty text>"}} (the program gets AppInputRequired with details.operationId (the journal operation id of the call); answer that App operation outside the program). Anything else is 400 validation; 409 call-not-pending when the call is not waiting.',
        ),
      },
      '/v1/events': {
        get: op(
          "The tenant's live feed as Server-Sent Events (apps.use + sessions.read): run (a run summary on creation, status change, end), decision (keys with decisions: asked or answered, with the App's name, tool, run description, code excerpt, arguments, justification, deadline), ready, key-revoked. Resumable with Last-Event-ID; a principal sees its own runs; counted in ISLET_SSE_STREAMS_PER_TENANT (429 past it).",
        ),
      },
      '/v1/usage': {
        get: op(
          "Usage per UTC day (from, to: YYYY-MM-DD, default the last 30 days): runs by final status, wallMs, cpuMs, bindingCalls, outputBytes, skillRuns, counted at each run's end. sessions.admin: the caller's tenant; platform.admin: every tenant, or one with tenant.",
        ),
      },
      '/v1/sessions': {
        get: op(
          "List the tenant's sessions by last activity (apps.use + sessions.read): limit, cursor, principal, since/until (last activity), tenant (platform.admin). Items: sessionId, principal, createdAt, lastActivity, runs {total, active, Completed, Failed, Cancelled}.",
        ),
      },
      '/v1/sessions/{sessionId}/code-runs': {
        get: op(
          "List a session's runs (cursor, limit); needs sessions.read. A session belongs to the principal that opened it: other principals see it empty unless their key has sessions.admin.",
        ),
      },
      '/v1/sessions/{sessionId}/events': {
        get: op(
          "SSE for a whole session (the console's session page): a `run` event {id, status, reason, createdAt, updatedAt, failure?} per latest run, then one whenever a run appears or changes; needs sessions.read",
          { responses: { 200: { description: 'text/event-stream' } } },
        ),
      },
      '/console/board-session': {
        post: op(
          'Sets a 15-minute cookie scoped to /queues that opens the queue board (bull-board) in a browser; needs platform.admin',
          { responses: { 204: { description: 'cookie set' } } },
        ),
      },
      '/console': {
        get: {
          summary: 'The web console (redirects to /console/)',
          responses: { 302: { description: 'redirect' } },
        },
      },
      '/console/{path}': {
        get: {
          summary: 'The web console and its assets (strict Content-Security-Policy)',
          responses: { 200: { description: 'HTML, JS, CSS' } },
        },
      },
      '/v1/connections': {
        get: op('List connections'),
        post: op(
          'Register a connection. The slug `files` is 400 reserved-connection-name; a connection or capability name the engine refuses as a binding name ($tools, lambda, console, a reserved word, `call`) is 400 invalid-binding-name with the engine text `invalid binding name: <name> (<why>)`; a slug clash is 409 conflict.',
          { requestBody: json('Connection') },
        ),
      },
      '/v1/connections/{id}': {
        get: op('Read a connection'),
        patch: op(
          "Edit a connection in place: `url`, an mcp server's `headers` (replaced whole; sealed, never returned), and named tools' `policy` (allow / ask / deny) or `description`. The name (binding prefix) stays; an unknown tool is 400.",
        ),
        delete: op('Remove a connection'),
      },
      '/v1/code-api': {
        get: op(
          'TypeScript declarations of the bindings (?q=words&connection=id|slug&style=run_code|code-mode): the Apps a run without `connections` sees, plus for run_code (default) the built-in files.read/write/list/remove (connection=files)',
        ),
      },
      '/v1/platform/settings': {
        get: op('Platform settings'),
        patch: op('Change settings (platform.admin); 409 on stale expectedVersion', {
          requestBody: json('SettingsPatch'),
        }),
      },
      '/v1/admin/tenants': {
        get: op('List tenants (platform.admin)'),
        post: op('Create a tenant (platform.admin)'),
      },
      '/v1/admin/tenants/{id}/keys': {
        get: op(
          "List a tenant's API keys (platform.admin): id, prefix, scopes, principal, created, lastUsed, expiresAt (ms or null); never a secret",
        ),
        post: op(
          'Create an API key (platform.admin): {scopes, principal?, expiresAt?}; the key belongs to the principal (default: itself); expiresAt is ms or ISO 8601, in the future',
        ),
      },
      '/v1/admin/tenants/{id}/keys/{keyId}': {
        delete: op(
          'Revoke an API key (platform.admin): 204; refused at once on every gateway, its open event streams end with event key-revoked',
        ),
      },
      '/v1/admin/tenants/{id}/keys/{keyId}/rotate': {
        post: op(
          'Rotate an API key (platform.admin): {graceSeconds?} (default 0, at most 30 days); a new secret for the same key id, the old one works through the grace',
        ),
      },
      '/v1/decisions': {
        get: op("The tenant's pending decisions in the Code Mode request shape (decisions scope)"),
      },
      '/v1/code-runs/{id}/decisions': {
        post: op('Answer a decision once (decisions scope); index -1 = the wider-access request', {
          requestBody: json('DecisionAnswer'),
        }),
      },
      '/v1/admin/tenants/{id}/run-policy': {
        get: op(
          "A tenant's run policy (default style run_code|code-mode for requests without one, approval hold|stop, time budget, fourEyes) and the effective rules (platform.admin)",
        ),
        put: op("Set a tenant's run policy (platform.admin)", { requestBody: json('RunPolicy') }),
      },
      '/mcp': {
        post: op(
          'MCP over Streamable HTTP (apps.use): initialize opens a session (Mcp-Session-Id, also the Islet session of its runs); tools/list, tools/call; notifications/cancelled cancels the run',
        ),
        get: op('No server-initiated stream: 405 (everything rides on the POST response stream)'),
        delete: op('End the MCP session (Mcp-Session-Id)'),
      },
      '/v1/tools': {
        get: op(
          "The caller's tools as definitions (?format=mcp|openai|anthropic), generated from the same zod schemas as /mcp",
        ),
      },
      '/v1/admin/tenants/{id}/mcp': {
        get: op(
          "A tenant's MCP tools: which surfaces, names and descriptions, and the effective list (platform.admin)",
        ),
        put: op("Set a tenant's MCP tools (platform.admin)", { requestBody: json('McpSettings') }),
      },
      '/v1/sessions/{id}/files': {
        get: op(
          "List a session's workspace files, one page in path order: {files: [{path, sizeBytes, modifiedAtMs}], nextCursor?}. Pass nextCursor as ?cursor= for the next page; no nextCursor = the last page. Regular files only (symlinks, FIFOs, sockets, devices are not listed).",
          {
            parameters: [
              {
                name: 'prefix',
                in: 'query',
                schema: { type: 'string' },
                description: 'A directory (everything under it) or a file',
              },
              {
                name: 'limit',
                in: 'query',
                schema: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT, default: MAX_LIST_LIMIT },
              },
              {
                name: 'cursor',
                in: 'query',
                schema: { type: 'string' },
                description: 'nextCursor of the previous page (opaque)',
              },
            ],
          },
        ),
      },
      '/v1/sessions/{id}/files/{path}': {
        put: op(
          'Write a workspace file: the body is the raw bytes (≤ 10 MiB); 201 {path, sizeBytes}. Over the workspace limits (100 MiB, 1000 files; counted across parallel writes and after skills) 409 conflict, reason workspace-full',
          {
            requestBody: {
              required: true,
              content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
            },
          },
        ),
        get: op(
          'Read a workspace file (application/octet-stream). A FIFO, socket or device is 409 unsupported-file-type at once; a symlink is 400 (reason outside-workspace)',
        ),
        delete: op('Delete a workspace file (204; 404 when absent)'),
      },
      '/v1/skills/run_code': {
        post: op(
          "Run a python, javascript or bash program (the run_code skill) on the mode's runner pool, under its kernel profile",
          {
            requestBody: json('SkillRequest'),
            responses: {
              200: {
                description: 'The program ended (successfully or not)',
                content: { 'application/json': { schema: { $ref: '#/components/schemas/SkillResult' } } },
              },
            },
          },
        ),
      },
      '/healthz': { get: { summary: 'Liveness', responses: { 200: { description: 'ok' } } } },
      '/readyz': {
        get: { summary: 'Readiness (Redis reachable)', responses: { 200: { description: 'ready' } } },
      },
      '/metrics': {
        get: { summary: 'Prometheus metrics', responses: { 200: { description: 'text exposition' } } },
      },
      '/openapi.json': {
        get: { summary: 'This description', responses: { 200: { description: 'OpenAPI 3.1 JSON' } } },
      },
      '/internal/v1/code-runs/{id}/calls': {
        post: {
          summary:
            'The runner → gateway binding-call channel: {attempt, index, binding, argsJson, takeover?} → {outcome, deliverySeq?}. Authorization: Bearer ISLET_INTERNAL_TOKEN, not an API key; served on ISLET_INTERNAL_PORT alone when that is set.',
          responses: { 200: { description: 'The journaled outcome' }, default: problem },
        },
      },
      '/internal/v1/code-runs/{id}/call-batch': {
        post: {
          summary:
            'The calls an execution made together (a Promise.all), in one request: {attempt, calls: [{index, binding, argsJson}]} (1 to 1000) → 200 application/x-ndjson, one line per call as soon as it is journaled: {index, status: 200, outcome, deliverySeq?} or {index, status, problem} with the status a single call would have had (5xx: retry the call alone, as a takeover). Authorization: Bearer ISLET_INTERNAL_TOKEN.',
          responses: { 200: { description: 'One NDJSON line per call' }, default: problem },
        },
      },
    },
  };
}
