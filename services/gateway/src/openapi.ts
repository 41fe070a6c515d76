/**
 * The OpenAPI 3.1 document served at `/openapi.json` and rendered by `/docs`, built from the
 * routes the gateway registered (their methods and URLs, collected by `createRouteCatalog`) and
 * each route's entry in `openapi/operations.ts` (the zod schemas the route validates with). Every
 * operation lists its success answers and every problem+json refusal it can give, each with an
 * example.
 */

import { mcpSettingsSchema } from '@islet/mcp';
import {
  codeRunRecordSchema,
  PROBLEM_BASE,
  PROBLEM_CONTENT_TYPE,
  PROBLEMS,
  type ProblemCode,
  problem,
  RUN_STYLE_RULES,
  runStyleTableMarkdown,
} from '@islet/protocol';
import { runPolicySchema } from '@islet/runs';
import type { RouteOptions } from 'fastify';
import { z } from 'zod';
import { appContractMarkdown } from './app-contract.ts';
import { connectionInputSchema, rotateSchema } from './connections.ts';
import {
  OPERATIONS,
  type OperationDoc,
  type ResponseDoc,
  skillRequestDocSchema,
  UNDOCUMENTED,
} from './openapi/operations.ts';
import * as r from './openapi/response-schemas.ts';
import { runRequestSchema } from './openapi/run-request-doc.ts';
import { decisionAnswerSchema } from './routes/decisions.ts';
import { settingsPatchSchema } from './routes/settings.ts';

interface RegisteredRoute {
  method: string;
  url: string;
}

/** Collects every route as it is registered (an `onRoute` hook on the root instance). */
export function createRouteCatalog() {
  const routes: RegisteredRoute[] = [];
  return {
    routes,
    onRoute(options: RouteOptions) {
      const methods = Array.isArray(options.method) ? options.method : [options.method];
      for (const method of methods) if (method !== 'HEAD') routes.push({ method, url: options.url });
    },
  };
}
export type RouteCatalog = ReturnType<typeof createRouteCatalog>;

export const operationKey = (route: RegisteredRoute) => `${route.method} ${route.url}`;
const isUndocumented = (url: string) =>
  UNDOCUMENTED.some((u) => url === u.prefix || url.startsWith(`${u.prefix}/`));

/** Registered routes that have no entry in OPERATIONS and are not under an UNDOCUMENTED prefix. */
export function undocumentedRoutes(routes: readonly RegisteredRoute[]): RegisteredRoute[] {
  return routes.filter((route) => !isUndocumented(route.url) && !OPERATIONS[operationKey(route)]);
}

/** `/v1/code-runs/:id` → `/v1/code-runs/{id}`; a trailing wildcard is the `{path}` parameter. */
function openApiPath(url: string): string {
  return url.replace(/:(\w+)/g, '{$1}').replace(/\/\*$/, '/{path}');
}

// Schemas named in components (and so in the SDK's generated types).
const NAMED = new Map<z.ZodType, string>([
  [codeRunRecordSchema, 'CodeRun'],
  [runRequestSchema, 'RunRequest'],
  [decisionAnswerSchema, 'DecisionAnswer'],
  [skillRequestDocSchema, 'SkillRequest'],
  [connectionInputSchema, 'ConnectionInput'],
  [settingsPatchSchema, 'SettingsPatch'],
  [runPolicySchema, 'RunPolicy'],
  [mcpSettingsSchema, 'McpSettings'],
  [rotateSchema, 'RotateSigningSecret'],
  [r.codeRunPageSchema, 'CodeRunPage'],
  [r.decisionSchema, 'Decision'],
  [r.connectionViewSchema, 'Connection'],
  [r.skillResultSchema, 'SkillResult'],
]);

// Answers are described as sent (defaults applied); requests as a client may write them.
const IO = new Map<string, 'input' | 'output'>([
  ['CodeRun', 'output'],
  ['CodeRunPage', 'output'],
  ['Decision', 'output'],
  ['Connection', 'output'],
  ['SkillResult', 'output'],
]);

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { unrepresentable: 'any', io }) as Record<
    string,
    unknown
  >;
  return rest;
}
const ref = (schema: z.ZodType, io: 'input' | 'output') => {
  const name = NAMED.get(schema);
  return name ? { $ref: `#/components/schemas/${name}` } : jsonSchema(schema, io);
};

const JSON_BODY_ERRORS: ProblemCode[] = [
  'validation',
  'malformed-json',
  'json-too-deep',
  'unsupported-media-type',
  'payload-too-large',
];

/** Every refusal an operation can give: what its auth, body, query and path imply, plus its own. */
function errorCodes(url: string, op: OperationDoc): ProblemCode[] {
  const codes = new Set<ProblemCode>();
  if (op.auth !== undefined) codes.add('unauthorized');
  if (Array.isArray(op.auth)) {
    codes.add('rate-limited');
    if (op.auth.length > 0) codes.add('forbidden');
  }
  if (op.body) {
    if (op.body.contentType) codes.add('payload-too-large');
    else for (const c of JSON_BODY_ERRORS) codes.add(c);
  }
  if (op.query) codes.add('validation');
  if (url.includes(':') || url.endsWith('*')) codes.add('not-found');
  for (const c of op.errors ?? []) codes.add(c);
  codes.add('internal');
  codes.add('unavailable');
  return [...codes];
}

function successResponse(res: ResponseDoc) {
  const content = res.schema
    ? { 'application/json': { schema: ref(res.schema, 'output') } }
    : res.contentType
      ? { [res.contentType]: { schema: { type: 'string' } } }
      : undefined;
  return { description: res.description, ...(content ? { content } : {}) };
}

function errorResponses(codes: ProblemCode[]) {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of codes) {
    const status = PROBLEMS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      String(status),
      {
        description: list.map((c) => PROBLEMS[c].title).join('; '),
        content: {
          [PROBLEM_CONTENT_TYPE]: {
            schema: { $ref: '#/components/schemas/Problem' },
            examples: Object.fromEntries(
              list.map((c) => [c, { summary: PROBLEMS[c].title, value: problem(c, `an example of ${c}`) }]),
            ),
          },
        },
      },
    ]),
  );
}

function parameters(url: string, op: OperationDoc) {
  const out: Array<Record<string, unknown>> = [];
  for (const m of url.matchAll(/:(\w+)/g))
    out.push({ name: m[1], in: 'path', required: true, schema: { type: 'string', minLength: 1 } });
  if (url.endsWith('*'))
    out.push({
      name: 'path',
      in: 'path',
      required: true,
      description: 'The file path in the workspace (slashes allowed)',
      schema: { type: 'string' },
    });
  if (op.query) {
    const js = jsonSchema(op.query, 'input') as {
      properties?: Record<string, Record<string, unknown>>;
      required?: string[];
    };
    for (const [name, schema] of Object.entries(js.properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({
        name,
        in: 'query',
        required: js.required?.includes(name) === true && !('default' in rest),
        schema: rest,
        ...(typeof description === 'string' ? { description } : {}),
      });
    }
  }
  for (const h of op.headers ?? [])
    out.push({
      name: h.name,
      in: 'header',
      required: false,
      description: h.description,
      schema: { type: 'string' },
    });
  return out;
}

const camel = (s: string) =>
  s.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''));
/** `POST /v1/code-runs/:id/cancel` → `postV1CodeRunsByIdCancel`: stable and unique per route. */
function operationId(route: RegisteredRoute): string {
  const path = route.url.replace(/:(\w+)/g, 'by-$1').replace(/\*$/, 'path');
  return camel(`${route.method.toLowerCase()}-${path}`);
}

function operation(route: RegisteredRoute, op: OperationDoc) {
  const security =
    op.auth === undefined ? [] : op.auth === 'internal' ? [{ internalToken: [] }] : [{ apiKey: [] }];
  const scopes = Array.isArray(op.auth) && op.auth.length > 0 ? ` Needs scope ${op.auth.join(' + ')}.` : '';
  const params = parameters(route.url, op);
  return {
    operationId: operationId(route),
    summary: op.summary,
    ...(op.description || scopes ? { description: `${op.description ?? ''}${scopes}`.trim() } : {}),
    tags: [op.tag],
    security,
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: true,
            content: {
              [op.body.contentType ?? 'application/json']: {
                schema: op.body.contentType
                  ? { type: 'string', format: 'binary' }
                  : ref(op.body.schema, 'input'),
                example: op.body.example,
              },
            },
          },
        }
      : {}),
    responses: {
      ...Object.fromEntries(Object.entries(op.responses).map(([s, res]) => [s, successResponse(res)])),
      ...errorResponses(errorCodes(route.url, op)),
    },
  };
}

/** The routes OPERATIONS describes: the document without a running app (the SDK's generator). */
export function documentedRoutes(): RegisteredRoute[] {
  return Object.keys(OPERATIONS).map((k) => {
    const [method, url] = k.split(' ') as [string, string];
    return { method, url };
  });
}

export function openApiDocument(routes: readonly RegisteredRoute[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  // Sorted: the same routes give the same document, whatever order they were registered in.
  const sorted = [...routes].sort((a, b) => operationKey(a).localeCompare(operationKey(b)));
  for (const route of sorted) {
    const op = OPERATIONS[operationKey(route)];
    if (!op || isUndocumented(route.url)) continue;
    const path = openApiPath(route.url);
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route, op) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Islet',
      version: '0.1.0',
      description: `Code Mode execution cluster. Errors are RFC 9457 problem+json; \`type\` URIs start with ${PROBLEM_BASE}: branch on them, never on \`title\` or \`detail\`.\n\n## run_code vs Code Mode\n\n${runStyleTableMarkdown()}\n\n${appContractMarkdown()}`,
    },
    'x-run-styles': RUN_STYLE_RULES,
    tags: [
      { name: 'runs', description: 'Submit, read, follow and cancel code runs' },
      { name: 'decisions', description: 'What a person answers before a run goes on' },
      { name: 'files', description: "A session's workspace files and the run_code skill" },
      { name: 'apps', description: 'Connections (Apps) and the bindings programs call' },
      { name: 'mcp', description: 'MCP over Streamable HTTP and tool definitions' },
      { name: 'platform', description: 'Settings, health, metrics, this description' },
      { name: 'admin', description: 'Tenants, keys and per-tenant policies (platform.admin)' },
      { name: 'console', description: 'The web console' },
      { name: 'internal', description: 'The runner channel (not for API clients)' },
    ],
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, `isk_…`' },
        internalToken: { type: 'http', scheme: 'bearer', description: 'ISLET_INTERNAL_TOKEN (runners only)' },
      },
      schemas: {
        ...Object.fromEntries(
          [...NAMED].map(([schema, name]) => [name, jsonSchema(schema, IO.get(name) ?? 'input')]),
        ),
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string', description: `${PROBLEM_BASE}<code>` },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            code: { type: 'string', enum: Object.keys(PROBLEMS) },
            errors: {
              type: 'array',
              items: {
                type: 'object',
                properties: { path: { type: 'string' }, message: { type: 'string' } },
              },
            },
          },
          additionalProperties: true,
        },
      },
    },
    paths,
  };
}
