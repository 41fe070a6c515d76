/**
 * The runner's one-call route (`POST /internal/v1/code-runs/:id/calls`) served ahead of fastify,
 * on the listener's own `request` event. A lone binding call is the gateway's most frequent
 * request and the runner a trusted peer with its own HTTP/1.1 client (runner gateway-post.ts);
 * fastify's generic machinery around it (its request and reply objects, routing, four hooks, the
 * body's stream through its content-type parser, the reply's send path) was a large part of the
 * gateway's CPU a call (README round 37 `call-gw2`).
 *
 * Only a request exactly as the runner sends it is taken here: POST, a plain run id in the path (no
 * percent-encoding, no query), `content-type: application/json`, `authorization` exactly the
 * runner's `Bearer <token>`, a `content-length` within the route's limit, no transfer coding, the
 * app neither closing nor draining. Everything else (a wrong or oddly spelled token with its
 * per-address failure limit, another content type, a chunked or too large body, a shutdown) goes to
 * fastify's route as before. Once taken, the body is parsed by the same parser as fastify's
 * (`parseJson`: the depth bound, fastify's JSON parser), the call served by the same function as
 * the route (`serveCall`), errors answered by the same table (`problemOfError`), and
 * `islet_http_*` recorded under the route's pattern: the same answers and metrics either way
 * (internal-call-path.test.ts holds the two to it).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { PROBLEM_CONTENT_TYPE } from '@islet/protocol';
import type { FastifyError } from 'fastify';
import { problemOfError } from './problem-reply.ts';

const PREFIX = '/internal/v1/code-runs/';
const SUFFIX = '/calls';
/** A run id as the path carries it unencoded; anything else is fastify's to decode and check. */
const PLAIN_ID = /^[A-Za-z0-9_-][A-Za-z0-9._~-]{0,199}$/;
/** fastify's content types for the route's answer and a problem (a JSON subtype gets `charset=utf-8`). */
const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = `${PROBLEM_CONTENT_TYPE}; charset=utf-8`;

export interface InternalCallPathOptions {
  /** The route's pattern, the `route` label of `islet_http_*`. */
  route: string;
  /** Most bytes of the body (the route's `bodyLimit`). */
  bodyLimitBytes: number;
  /** Whether `authorization` is exactly the runner's header (auth.ts `internalHeaderIs`). */
  tokenIs(authorization: string): boolean;
  /** fastify's parser for a JSON body, with the depth bound (app.ts): the same value or error. */
  parseJson(body: string, done: (err: Error | null, value?: unknown) => void): void;
  /**
   * The route's work (routes/internal.ts `singleCallServer`): the answer's text, or a thrown
   * problem. `gone` makes the client-gone signal when first asked (only a held decision's wait does).
   */
  serveCall(id: string, body: unknown, gone: () => AbortSignal): Promise<string>;
  /** `islet_http_*` for one answer (app.ts `httpRecorder`). */
  record(route: string, method: string, statusCode: number, seconds: number): void;
  /** The app's closing signal: once aborted, fastify answers (its 503 while closing). */
  closing: AbortSignal;
  log: { warn: (obj: object, msg: string) => void; error: (obj: object, msg: string) => void };
}

export class InternalCallPath {
  /** Requests this path took (tests and benches read it). */
  taken = 0;
  private draining = false;
  private readonly o: InternalCallPathOptions;

  constructor(options: InternalCallPathOptions) {
    this.o = options;
  }

  /**
   * Puts this path in front of `server`'s one `request` listener (fastify's handler); false, and
   * nothing changed, when the server does not have exactly one.
   */
  install(server: Server): boolean {
    const listeners = server.listeners('request');
    if (listeners.length !== 1) return false;
    const fastify = listeners[0] as (req: IncomingMessage, res: ServerResponse) => void;
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (!this.take(req, res)) fastify.call(server, req, res);
    });
    return true;
  }

  /**
   * The gateway is draining (shutdown.ts): from now on every request goes through fastify, whose
   * `onSend` hook closes the connection after the answer; one already taken here closes it too.
   */
  beginDraining(): void {
    this.draining = true;
  }

  /** Serves `req` when it is the runner's plain call request; false leaves it untouched for fastify. */
  take(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.draining || this.o.closing.aborted || req.method !== 'POST') return false;
    const url = req.url;
    if (url === undefined || !url.startsWith(PREFIX) || !url.endsWith(SUFFIX)) return false;
    const id = url.slice(PREFIX.length, url.length - SUFFIX.length);
    if (!PLAIN_ID.test(id)) return false;
    const h = req.headers;
    const length = h['content-length'];
    if (
      h['content-type'] !== 'application/json' ||
      h['transfer-encoding'] !== undefined ||
      length === undefined ||
      !(Number(length) <= this.o.bodyLimitBytes) ||
      typeof h.authorization !== 'string' ||
      !this.o.tokenIs(h.authorization)
    )
      return false;
    this.taken++;
    const started = performance.now();
    const chunks: Buffer[] = [];
    // A client gone mid-body: no `end`, nothing to answer (its `close` ends the response).
    req.on('error', () => undefined);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      this.o.parseJson(text, (err, body) => {
        if (err) return this.fail(res, err, started);
        this.o
          .serveCall(id, body, goneSignal(res))
          .then((answer) => this.answer(res, 200, JSON_TYPE, answer, started, undefined))
          .catch((e: unknown) => this.fail(res, e, started));
      });
    });
    return true;
  }

  private fail(res: ServerResponse, err: unknown, started: number): void {
    const { problem, headers } = problemOfError(err as FastifyError, this.o.log);
    this.answer(res, problem.status, PROBLEM_TYPE, JSON.stringify(problem), started, headers);
  }

  private answer(
    res: ServerResponse,
    status: number,
    type: string,
    text: string,
    started: number,
    extra: Record<string, string> | undefined,
  ): void {
    if (!res.destroyed) {
      const headers: Record<string, string | number> = { ...extra };
      headers['content-type'] = type;
      headers['content-length'] = Buffer.byteLength(text);
      if (this.draining) headers.connection = 'close';
      res.writeHead(status, headers);
      res.end(text);
    }
    this.o.record(this.o.route, 'POST', status, (performance.now() - started) / 1000);
  }
}

/**
 * A signal aborted when the client goes away before its answer is finished (problem-reply.ts
 * `clientGone`), made when first asked: only a call that waits in place for a decision listens to
 * it, so a call served straight makes no AbortController and no `close` listener (round 42
 * `binding-floor`). Asked after the client went, it is aborted already.
 */
export function goneSignal(res: ServerResponse): () => AbortSignal {
  let signal: AbortSignal | undefined;
  return () => {
    if (signal) return signal;
    const ac = new AbortController();
    signal = ac.signal;
    const closed = () => {
      if (!res.writableFinished) ac.abort();
    };
    if (res.destroyed || res.closed) closed();
    else res.once('close', closed);
    return signal;
  };
}

/** Each app's fast path (app.ts sets it; shutdown.ts drains it). */
export const internalCallPaths = new WeakMap<object, InternalCallPath>();
