/**
 * Every HTTP refusal is an RFC 9457 problem+json body. `type` URIs are stable: clients branch
 * on them, never on `title` or `detail`. One table, used by every route.
 */
export const PROBLEM_BASE = 'https://islet.dev/problems/';

export const PROBLEMS = {
  validation: { status: 400, title: 'The request is not valid' },
  'malformed-json': { status: 400, title: 'The body is not valid JSON' },
  'unsupported-media-type': { status: 415, title: 'The body must be application/json' },
  'payload-too-large': { status: 413, title: 'The body is too large' },
  unauthorized: { status: 401, title: 'A valid API key is required' },
  forbidden: { status: 403, title: 'The API key lacks a required scope' },
  'four-eyes': { status: 403, title: 'Another API key must approve this run' },
  'json-too-deep': { status: 400, title: 'The JSON body is nested too deeply' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  'unsupported-file-type': { status: 409, title: 'Only regular files and directories are served' },
  'reserved-connection-name': { status: 400, title: 'The connection or capability name is reserved' },
  'invalid-binding-name': { status: 400, title: 'The name cannot be a binding name' },
  'version-conflict': { status: 409, title: 'The settings changed since expectedVersion' },
  'idempotency-conflict': { status: 409, title: 'The Idempotency-Key was used with another request' },
  'run-finished': { status: 409, title: 'The run has already ended' },
  'call-not-pending': { status: 409, title: 'The call is not waiting for a client result' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'quota-exceeded': { status: 429, title: 'Too many runs in flight' },
  'connection-quota-exceeded': { status: 409, title: 'The tenant has as many connections as it may' },
  'storage-quota-exceeded': { status: 507, title: "The tenant's share of storage is used up" },
  'app-unreachable': { status: 502, title: 'The App could not be reached or did not answer as expected' },
  unavailable: { status: 503, title: 'The service is not available' },
  internal: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  /** Extension member: the stable code (last segment of `type`). */
  code: ProblemCode;
  /** Extension members, e.g. `errors` for validation, `currentVersion` for conflicts. */
  [extension: string]: unknown;
}

export function problem(
  code: ProblemCode,
  detail?: string,
  extensions: Record<string, unknown> = {},
): Problem {
  const def = PROBLEMS[code];
  return {
    type: PROBLEM_BASE + code,
    title: def.title,
    status: def.status,
    ...(detail !== undefined ? { detail } : {}),
    code,
    ...extensions,
  };
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
