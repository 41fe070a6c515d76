/**
 * What the OpenAPI document says about each route the gateway registers, keyed `METHOD /url` as
 * fastify spells the URL. Request schemas are the zod schemas the routes validate with (imported,
 * never copied); the document's paths come from the registered routes (route-catalog.ts), so a
 * route without an entry here is missing from the document, which the OpenAPI test refuses.
 */
import type { Scope } from '@islet/core';
import { MAX_LIST_LIMIT } from '@islet/kernel-sandbox';
import { codeRunRecordSchema, type ProblemCode, skillRequestSchema } from '@islet/protocol';
import { z } from 'zod';
import { recordQuerySchema } from '../record-bounds.ts';
import { decisionAnswerSchema } from '../routes/decisions.ts';
import { clientAnswerSchema, sessionRunsQuerySchema } from '../routes/runs.ts';
import { PLATFORM_OPERATIONS } from './operations-platform.ts';
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
  ...PLATFORM_OPERATIONS,
};

/** Registered routes the document leaves out, by URL prefix, and why. */
export const UNDOCUMENTED: ReadonlyArray<{ prefix: string; why: string }> = [
  { prefix: '/docs', why: 'Swagger UI, the interactive page rendering this document' },
  {
    prefix: '/queues',
    why: "bull-board's queue board and its private API (platform admins, behind a cookie)",
  },
];
