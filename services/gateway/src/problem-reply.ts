/**
 * problem+json for every refusal: route code throws `HttpProblem`; fastify's own errors (bad JSON,
 * wrong content type, body too large, unknown route) are mapped to the same table, so no input
 * ever yields a 5xx.
 */
import {
  PROBLEM_CONTENT_TYPE,
  type Problem,
  type ProblemCode,
  problem,
  type UnknownField,
  unknownFieldsMessage,
  unknownFieldsOf,
} from '@islet/protocol';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ZodError, type z } from 'zod';

export class HttpProblem extends Error {
  readonly problem: Problem;
  readonly headers: Record<string, string>;
  constructor(
    code: ProblemCode,
    detail?: string,
    extensions: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(detail ?? code);
    this.problem = problem(code, detail, extensions);
    this.headers = headers;
  }
}

/**
 * A zod failure as one problem. `schema` (the one that failed) lets an unknown field be answered
 * with the known field it probably meant; `hints` say where a field that belongs elsewhere goes.
 */
export function validationProblem(
  error: ZodError,
  prefix = '',
  schema?: z.ZodType,
  hints: Readonly<Record<string, string>> = {},
): HttpProblem {
  const unknown: UnknownField[] = [];
  const errors: Array<{ path: string; message: string }> = [];
  for (const i of error.issues) {
    if (i.code === 'unrecognized_keys') {
      const at = i.path.map(String);
      const known = schema ? knownKeysAt(schema, at) : [];
      const base = prefix + at.map((p) => `${p}.`).join('');
      const body = Object.fromEntries(i.keys.map((k) => [k, true]));
      for (const f of unknownFieldsOf(body, known, at.length === 0 ? hints : {}, base)) {
        unknown.push(f);
        errors.push({ path: f.path, message: unknownFieldsMessage([f]) });
      }
      continue;
    }
    errors.push({ path: prefix + i.path.join('.'), message: i.message });
  }
  const detail = errors
    .map((e) => (e.path && !e.message.startsWith('unknown field') ? `${e.path}: ${e.message}` : e.message))
    .join('; ');
  return new HttpProblem('validation', detail, {
    errors,
    ...(unknown.length ? { unknownFields: unknown } : {}),
  });
}

/** Unknown top-level fields of `body` (those outside `known`) as a problem, or undefined. */
export function unknownFieldsProblem(
  body: unknown,
  known: readonly string[],
  hints: Readonly<Record<string, string>> = {},
): HttpProblem | undefined {
  const unknown = unknownFieldsOf(body, known, hints);
  if (unknown.length === 0) return undefined;
  const errors = unknown.map((f) => ({ path: f.path, message: unknownFieldsMessage([f]) }));
  return new HttpProblem('validation', unknownFieldsMessage(unknown), { errors, unknownFields: unknown });
}

/** The field names an object schema takes at `path` (through optional, default, array, union). */
function knownKeysAt(schema: z.ZodType, path: readonly string[]): string[] {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
      return knownKeysAt(def.innerType as z.ZodType, path);
    case 'pipe':
      return knownKeysAt(def.in as z.ZodType, path);
    case 'array':
      return knownKeysAt(def.element as z.ZodType, /^\d+$/.test(path[0] ?? '') ? path.slice(1) : path);
    case 'union':
      return (def.options as z.ZodType[]).flatMap((o) => knownKeysAt(o, path));
    case 'object': {
      const shape = def.shape as Record<string, z.ZodType>;
      if (path.length === 0) return Object.keys(shape);
      const next = shape[path[0]!];
      return next ? knownKeysAt(next, path.slice(1)) : [];
    }
    default:
      return [];
  }
}

export function sendProblem(reply: FastifyReply, p: Problem, headers: Record<string, string> = {}) {
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  return reply.code(p.status).type(PROBLEM_CONTENT_TYPE).send(p);
}

const FASTIFY_CODES: Record<string, ProblemCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'validation',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload-too-large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed-json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed-json',
  FST_ERR_VALIDATION: 'validation',
};

/**
 * Redis being briefly unreachable (a Redis Cluster master failing over, a Sentinel switch, a
 * restart replaying its AOF) is not a bug of ours: the client is told to come back (503 +
 * Retry-After) — a submit retried with its Idempotency-Key is the same run — instead of a 500.
 */
const REDIS_TRANSIENT =
  /^(CLUSTERDOWN|TRYAGAIN|LOADING|READONLY|MASTERDOWN)\b|Connection is closed|Failed to refresh slots cache|Too many Cluster redirections|Stream isn't writeable|ECONNREFUSED|ECONNRESET/;

/** Redis refused a write at its `maxmemory` (noeviction): not the request's fault, nor a bug. */
export function isRedisFull(err: unknown): boolean {
  return err instanceof Error && /^OOM\b/.test(err.message);
}
/** What a client is told to wait when Redis is full (space comes back as retained data expires). */
const REDIS_FULL_RETRY_AFTER_SECONDS = 30;

export function isRedisTransient(err: Error): boolean {
  return (
    err.name === 'MaxRetriesPerRequestError' ||
    err.name === 'ClusterAllFailedError' ||
    REDIS_TRANSIENT.test(err.message)
  );
}

/** The problem (and its headers) an error thrown while serving a request is answered with. */
export function problemOfError(
  err: FastifyError,
  log: { warn: (obj: object, msg: string) => void; error: (obj: object, msg: string) => void },
): { problem: Problem; headers: Record<string, string> } {
  const none = {};
  if (err instanceof HttpProblem) return { problem: err.problem, headers: err.headers };
  if (err instanceof ZodError) return { problem: validationProblem(err).problem, headers: none };
  const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
  if (mapped) return { problem: problem(mapped, err.message), headers: none };
  if (err instanceof SyntaxError) return { problem: problem('malformed-json', err.message), headers: none };
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500)
    return { problem: { ...problem('validation', err.message), status }, headers: none };
  if (isRedisTransient(err)) {
    log.warn({ err: err.message }, 'Redis unavailable; answered 503');
    return {
      problem: problem('unavailable', 'Redis is failing over; retry shortly'),
      headers: { 'retry-after': '1' },
    };
  }
  if (isRedisFull(err)) {
    log.warn({ err: err.message }, 'Redis is at maxmemory; answered 503');
    return {
      problem: problem('unavailable', 'storage is full; retry later'),
      headers: { 'retry-after': String(REDIS_FULL_RETRY_AFTER_SECONDS) },
    };
  }
  log.error({ err }, 'unhandled error');
  return { problem: problem('internal', 'an internal error occurred; it was logged'), headers: none };
}

export function installProblemHandlers(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const { problem: p, headers } = problemOfError(err, request.log);
    return sendProblem(reply, p, headers);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problem('not-found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );
}

/** An AbortSignal that fires when the client goes away before the response is finished. */
export function clientGone(reply: FastifyReply, also?: AbortSignal): AbortSignal {
  const ac = new AbortController();
  const abort = () => ac.abort();
  also?.addEventListener('abort', abort, { once: true });
  reply.raw.once('close', () => {
    // `also` (the app's closing signal) outlives every request: do not leave a listener on it.
    also?.removeEventListener('abort', abort);
    if (!reply.raw.writableFinished) ac.abort();
  });
  return ac.signal;
}
