/**
 * The runner → gateway channel through fastify, authenticated with ISLET_INTERNAL_TOKEN. Any
 * replica serves any call; a call's answer is sent only after the journal holds its outcome. What
 * the two routes check, serve and answer is `internal-calls.ts`; the runner's own requests reach it
 * through the fast path on the listener (`internal-fast-path.ts`), which hands every other request
 * for these paths (a refused token, an odd header, a body fastify must refuse) to these routes.
 */
import type { FastifyPluginAsync } from 'fastify';
import {
  BATCH_HEADERS,
  BATCH_ROUTE,
  CALLS_ROUTE,
  createInternalCalls,
  INTERNAL_BODY_LIMIT,
} from '../internal-calls.ts';
import { clientGone } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

export function internalRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth } = ctx;
  const calls = createInternalCalls(ctx.bindingCalls, ctx.deps.config.ISLET_JSON_MAX_DEPTH);
  const options = { preHandler: auth.requireInternal, bodyLimit: INTERNAL_BODY_LIMIT };
  return async (app) => {
    app.post(CALLS_ROUTE, options, async (request, reply) => {
      const { id } = idParams.parse(request.params);
      return calls.one(id, request.body, clientGone(reply));
    });

    app.post(BATCH_ROUTE, options, async (request, reply) => {
      const { id } = idParams.parse(request.params);
      const { attempt, calls: batch } = calls.batch(request.body);
      const gone = clientGone(reply);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, BATCH_HEADERS);
      await calls.stream(id, attempt, batch, gone, res, request.log);
    });
  };
}
