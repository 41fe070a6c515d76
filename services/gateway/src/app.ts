/** `buildApp(deps)`: the fastify app without `listen`, so tests drive it through `inject()`. */

import { counterSeries, histogramSeries, type Metrics } from '@islet/core';
import { problem } from '@islet/protocol';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { createAuth } from './auth.ts';
import { createBindingCalls } from './binding-calls.ts';
import type { GatewayDeps } from './deps.ts';
import { InternalCallPath, internalCallPaths } from './internal-call-path.ts';
import { jsonDepthExceeds } from './json-depth.ts';
import { lazyChildLoggerFactory } from './lazy-request-logger.ts';
import { createMcpApps } from './mcp-apps.ts';
import type { RouteCatalog } from './openapi.ts';
import { HttpProblem, installProblemHandlers, sendProblem } from './problem-reply.ts';
import type { RouteContext } from './routes/context.ts';
import { registerRoutes, type Surface } from './routes/index.ts';
import { INTERNAL_BODY_LIMIT_BYTES, INTERNAL_CALL_ROUTE, singleCallServer } from './routes/internal.ts';
import { createRunsService } from './runs-service.ts';

interface BuildAppOptions {
  /** Extra route groups (decisions, skills, …), registered after the built-in ones. */
  routes?: Array<(ctx: RouteContext) => Parameters<FastifyInstance['register']>[0]>;
  /** Which routes this listener serves (see `Surface`). Default `all`. */
  surface?: Surface;
  /** Serve /metrics on this listener (false when a metrics port serves it). Default true. */
  metrics?: boolean;
  /** Collects the registered routes (the OpenAPI document's paths); default: a fresh one. */
  routeCatalog?: RouteCatalog;
}

export async function buildApp(deps: GatewayDeps, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    bodyLimit: deps.config.ISLET_BODY_LIMIT_BYTES,
    // No per-request log lines (a busy gateway would log two per run); errors are logged where handled.
    logController: new LogController({ disableRequestLogging: true }),
    // Nor a pino child per request: made when a request first logs (lazy-request-logger.ts).
    childLoggerFactory: lazyChildLoggerFactory,
    return503OnClosing: true,
    // ids arrive in URLs; keep them bounded
    routerOptions: { maxParamLength: 256 },
    // The client address per-address limits count (failed authentication) comes from the ingress.
    trustProxy: (_address: string, hop: number) => hop < deps.config.ISLET_TRUST_PROXY_HOPS,
    // Bad URL encoding and similar router-level errors get the same problem+json shape.
    frameworkErrors: (error, _request, reply) => {
      sendProblem(reply, problem('validation', error.message));
    },
  });
  // Only JSON bodies are accepted; anything else is a 415 problem, not a string to trip over.
  app.removeContentTypeParser('text/plain');
  // JSON nesting is bounded before parsing, for every route: a deep body is a 400 before any
  // handler runs (nothing consumed), and nothing downstream recurses over a hostile structure.
  // Fastify's own parser does the rest (empty body, __proto__/constructor poisoning refused).
  const maxDepth = deps.config.ISLET_JSON_MAX_DEPTH;
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  /** A JSON body's value or its refusal: fastify's parser, and the internal call fast path's. */
  const parseJson = (body: string, done: (err: Error | null, value?: unknown) => void) => {
    if (jsonDepthExceeds(body, maxDepth)) {
      done(
        new HttpProblem('json-too-deep', `JSON nests deeper than ${maxDepth} levels`, { maxDepth }),
        undefined,
      );
      return;
    }
    // fastify's default JSON parser reads only the body, not the request.
    jsonParser(undefined as never, body, done);
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) =>
    parseJson(body as string, done),
  );
  installProblemHandlers(app);
  // Callback-style hooks (here and on the request path): no promise and microtask per request.
  const recordHttp = httpRecorder(deps.metrics);
  app.addHook('onResponse', (request, reply, done) => {
    recordHttp(
      request.routeOptions.url ?? 'unmatched',
      request.method,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());
  const mcpApps = createMcpApps(deps);
  app.addHook('onClose', async () => mcpApps.close());
  const ctx: RouteContext = {
    closing: closing.signal,
    deps,
    auth: createAuth(deps),
    runsService: createRunsService(deps),
    bindingCalls: createBindingCalls(deps, mcpApps),
    mcpApps,
    ...(options.routeCatalog ? { routes: options.routeCatalog } : {}),
  };
  await registerRoutes(app, ctx, options.routes, options.surface, options.metrics ?? true);
  const surface = options.surface ?? 'all';
  if (surface === 'all' || surface === 'internal') {
    const path = new InternalCallPath({
      route: INTERNAL_CALL_ROUTE,
      bodyLimitBytes: INTERNAL_BODY_LIMIT_BYTES,
      tokenIs: ctx.auth.internalHeaderIs,
      parseJson,
      serveCall: singleCallServer(ctx),
      record: recordHttp,
      closing: closing.signal,
      log: deps.logger,
    });
    if (path.install(app.server)) internalCallPaths.set(app, path);
  }
  return app;
}

/**
 * `islet_http_requests_total` and `islet_http_request_duration_seconds` for one response, through
 * series resolved once per route, method and code (metric-series.ts): the same series and values
 * as `inc`/`observe` with the labels, without prom-client's per-call label work.
 */
export function httpRecorder(metrics: Pick<Metrics, 'httpRequests' | 'httpDuration'>) {
  const byKey = new Map<string, { count: () => void; observe: (seconds: number) => void }>();
  return (route: string, method: string, statusCode: number, seconds: number) => {
    const key = `${statusCode} ${method} ${route}`;
    let series = byKey.get(key);
    if (!series) {
      series = {
        count: counterSeries(metrics.httpRequests, { route, method, code: String(statusCode) }),
        observe: histogramSeries(metrics.httpDuration, { route, method }),
      };
      byKey.set(key, series);
    }
    series.count();
    series.observe(seconds);
  };
}
