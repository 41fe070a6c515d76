/**
 * The runner's binding calls served ahead of fastify, on the same listener. A call's gateway work
 * is four wake-ups on the call's path (README round 28, call-seq); fastify's request handling for
 * the runner's POST (the router, a Request and a Reply, the body read inside an `AsyncResource`,
 * the hooks, the preHandler's and the handler's promises, the reply's serialization chain) was a
 * share of each call's CPU that no call needs: the runner sends one exact request.
 *
 * So a request is taken here only when it is that exact request, decided from its head before a
 * byte of its body is read: `POST` to one of the two internal paths with a plain run id, `Content-Type:
 * application/json`, a non-zero `Content-Length` within the routes' body limit, no transfer or
 * content encoding, `Authorization: Bearer <ISLET_INTERNAL_TOKEN>` exactly, and fastify not closing.
 * Every other request, including every one fastify would refuse before reading its body (a wrong
 * or missing token with its per-address count, an odd header, a body too large, an empty body, a
 * gateway closing with its 503), goes to fastify untouched, so those answers are fastify's own.
 *
 * What is left to answer here is what the body can make fastify answer once the token is right, and
 * it is answered the same: the JSON depth bound and fastify's own JSON parser (each refused with
 * `Connection: close`, as fastify's content-type parser does), then `internal-calls.ts` (the same
 * checks, serving and NDJSON stream fastify's routes call), problems by the same table
 * (`problemOfError`), the same headers in the same order, `Connection: close` while the gateway
 * drains (`shutdown.ts`'s onSend), and the same `islet_http_requests_total` /
 * `islet_http_request_duration_seconds` series, counted when the response finishes (app.ts's
 * onResponse). Differences: a line logged here carries no fastify `reqId`.
 *
 * `inject()` never comes here (it calls fastify's handler, not the server's): tests that inject
 * these routes go through `routes/internal.ts`, which calls the same module.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROBLEM_CONTENT_TYPE, type Problem } from '@islet/protocol';
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import {
  BATCH_HEADERS,
  BATCH_ROUTE,
  CALLS_ROUTE,
  INTERNAL_BODY_LIMIT,
  type InternalCalls,
} from './internal-calls.ts';
import { jsonDepthExceeds } from './json-depth.ts';
import { HttpProblem, problemOfError, responseGone } from './problem-reply.ts';

const PREFIX = '/internal/v1/code-runs/';
/** A run id the router passes as it is (unreserved characters: nothing to decode), as `idParams` bounds it. */
const PATH = /^\/internal\/v1\/code-runs\/([A-Za-z0-9._~-]{1,200})\/(calls|call-batch)$/;
const LENGTH = /^[1-9][0-9]{0,9}$/;
const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = `${PROBLEM_CONTENT_TYPE}; charset=utf-8`;

/** Fastify's JSON parser without its request argument (it reads none). */
type JsonParser = (body: string, done: (err: Error | null, value?: unknown) => void) => void;

interface FastPathOptions {
  calls: InternalCalls;
  token: string;
  maxDepth: number;
  /** Fastify's own JSON parser (`app.getDefaultJsonParser`), as the routes' content-type parser uses it. */
  jsonParser: JsonParser;
  metrics: Pick<GatewayDeps['metrics'], 'httpRequests' | 'httpDuration'>;
  logger: GatewayDeps['logger'];
}

const draining = new WeakMap<FastifyInstance, () => boolean>();

/** Tells an app's fast path when the gateway drains (`shutdown.ts`): its answers then close their connection. */
export function drainFastPath(app: FastifyInstance, isDraining: () => boolean): void {
  draining.set(app, isDraining);
}

/** Requests the fast path of any app took so far (tests read it: the path was taken). */
export const fastPathTaken = { count: 0 };

/**
 * Puts the fast path in front of fastify's request handler on `app`'s server. Call once, right after
 * the app is made, on an app that registers the internal routes.
 */
export function installInternalFastPath(app: FastifyInstance, options: FastPathOptions): void {
  const { calls, maxDepth, jsonParser, metrics, logger } = options;
  const server = app.server;
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  const fastifyHandler = handlers[0];
  if (!fastifyHandler || handlers.length !== 1)
    throw new Error('fast path: expected fastify as the one request handler');
  // Fastify's own closing state (set when close() reaches its onClose step), read as fastify reads
  // it per request: while it is set fastify answers 503 and closes, so the request goes there.
  const stateKey = Object.getOwnPropertySymbols(app).find((s) => s.description === 'fastify.state');
  if (!stateKey) throw new Error('fast path: fastify.state not found');
  const state = (app as unknown as Record<symbol, { closing: boolean }>)[stateKey]!;
  const expected = Buffer.from(`Bearer ${options.token}`);
  const isDraining = () => draining.get(app)?.() === true;

  const tokenMatches = (header: string | undefined) => {
    if (header === undefined || header.length !== expected.length) return false;
    const got = Buffer.from(header);
    return got.length === expected.length && timingSafeEqual(got, expected);
  };

  /** An answer with fastify's headers, in fastify's order (`reply.send` → onSend → `writeHead`). */
  const answer = (
    res: ServerResponse,
    status: number,
    type: string,
    payload: string,
    extra?: Record<string, string>,
    closeAfter = false,
  ) => {
    // The content-type parser's `connection` comes first: it is set before the error is sent.
    const headers: Record<string, string> = closeAfter ? { connection: 'close' } : {};
    if (extra) for (const [k, v] of Object.entries(extra)) headers[k.toLowerCase()] = v;
    headers['content-type'] = type;
    if (isDraining()) headers.connection = 'close';
    headers['content-length'] = String(Buffer.byteLength(payload));
    res.writeHead(status, headers);
    res.end(payload);
  };
  const refuse = (res: ServerResponse, err: unknown, closeAfter = false) => {
    const { problem, headers } = problemOfError(err as Error, logger);
    // Failed after its head went out: nothing else can be said on this response.
    if (res.headersSent) return void res.destroy();
    answer(res, problem.status, PROBLEM_TYPE, JSON.stringify(problem satisfies Problem), headers, closeAfter);
  };

  function serve(req: IncomingMessage, res: ServerResponse, id: string, batch: boolean): void {
    fastPathTaken.count++;
    const route = batch ? BATCH_ROUTE : CALLS_ROUTE;
    const started = performance.now();
    // As app.ts's onResponse, which fastify runs on the response's `finish` or `error`.
    const counted = () => {
      res.removeListener('finish', counted);
      res.removeListener('error', counted);
      metrics.httpRequests.inc({ route, method: 'POST', code: String(res.statusCode) });
      metrics.httpDuration.observe({ route, method: 'POST' }, (performance.now() - started) / 1000);
    };
    res.on('finish', counted);
    res.on('error', counted);
    req.setEncoding('utf8');
    let text = '';
    req.on('data', (chunk: string) => {
      text += chunk;
    });
    // A request cut before its body ended: nothing to answer (its socket is gone), as with fastify.
    req.on('error', () => {});
    req.on('end', () => {
      if (jsonDepthExceeds(text, maxDepth)) {
        const deep = new HttpProblem('json-too-deep', `JSON nests deeper than ${maxDepth} levels`, {
          maxDepth,
        });
        return refuse(res, deep, true);
      }
      let parseError: Error | null = null;
      let body: unknown;
      jsonParser(text, (err, value) => {
        parseError = err;
        body = value;
      });
      if (parseError) return refuse(res, parseError, true);
      if (!batch) {
        calls
          .one(id, body, responseGone(res))
          // A throw while answering (serializing) is refused like the serve's own, as fastify's 500.
          .then((served) => answer(res, 200, JSON_TYPE, JSON.stringify(served)))
          .catch((err: unknown) => refuse(res, err));
        return;
      }
      let checked: ReturnType<InternalCalls['batch']>;
      try {
        checked = calls.batch(body);
      } catch (err) {
        return refuse(res, err);
      }
      const gone = responseGone(res);
      res.writeHead(200, BATCH_HEADERS);
      calls
        .stream(id, checked.attempt, checked.calls, gone, res, logger)
        .catch((err: unknown) => logger.error({ err, runId: id }, 'batch failed'));
    });
  }

  function take(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url;
    if (req.method !== 'POST' || url === undefined || !url.startsWith(PREFIX)) return false;
    const m = PATH.exec(url);
    if (!m) return false;
    const h = req.headers;
    const length = h['content-length'];
    if (
      h['content-type'] !== 'application/json' ||
      length === undefined ||
      !LENGTH.test(length) ||
      Number(length) > INTERNAL_BODY_LIMIT ||
      h['transfer-encoding'] !== undefined ||
      h['content-encoding'] !== undefined ||
      !tokenMatches(h.authorization) ||
      state.closing
    )
      return false;
    serve(req, res, m[1]!, m[2] === 'call-batch');
    return true;
  }

  server.removeListener('request', fastifyHandler);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!take(req, res)) fastifyHandler.call(server, req, res);
  });
}
