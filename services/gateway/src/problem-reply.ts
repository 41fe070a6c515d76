/**
 * problem+json for every refusal: route code throws `HttpProblem`; fastify's own errors (bad JSON,
 * wrong content type, body too large, unknown route) are mapped to the same table, so no input
 * ever yields a 5xx.
 */
import { PROBLEM_CONTENT_TYPE, type Problem, type ProblemCode, problem } from '@islet/protocol';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ZodError } from 'zod';

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

export function validationProblem(error: ZodError, prefix = ''): HttpProblem {
  const errors = error.issues.map((i) => ({ path: prefix + i.path.join('.'), message: i.message }));
  const detail = errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join('; ');
  return new HttpProblem('validation', detail, { errors });
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
export const REDIS_FULL_RETRY_AFTER_SECONDS = 30;

export function isRedisTransient(err: Error): boolean {
  return (
    err.name === 'MaxRetriesPerRequestError' ||
    err.name === 'ClusterAllFailedError' ||
    REDIS_TRANSIENT.test(err.message)
  );
}

export function installProblemHandlers(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof HttpProblem) return sendProblem(reply, err.problem, err.headers);
    if (err instanceof ZodError) {
      const p = validationProblem(err);
      return sendProblem(reply, p.problem);
    }
    const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (mapped) return sendProblem(reply, problem(mapped, err.message));
    if (err instanceof SyntaxError) return sendProblem(reply, problem('malformed-json', err.message));
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500)
      return sendProblem(reply, { ...problem('validation', err.message), status });
    if (isRedisTransient(err)) {
      request.log.warn({ err: err.message }, 'Redis unavailable; answered 503');
      return sendProblem(reply, problem('unavailable', 'Redis is failing over; retry shortly'), {
        'retry-after': '1',
      });
    }
    if (isRedisFull(err)) {
      request.log.warn({ err: err.message }, 'Redis is at maxmemory; answered 503');
      return sendProblem(reply, problem('unavailable', 'storage is full; retry later'), {
        'retry-after': String(REDIS_FULL_RETRY_AFTER_SECONDS),
      });
    }
    request.log.error({ err }, 'unhandled error');
    return sendProblem(reply, problem('internal', 'an internal error occurred; it was logged'));
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
