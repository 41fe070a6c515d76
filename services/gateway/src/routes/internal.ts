/**
 * The runner → gateway channel: `POST /internal/v1/code-runs/:id/calls`, authenticated with
 * ISLET_INTERNAL_TOKEN. Any replica serves any call; the answer is sent only after the journal
 * holds the outcome. Each call is its own request, so a program's parallel calls stay parallel.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { jsonDepthExceeds } from '../json-depth.ts';
import { clientGone, HttpProblem, validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

export const internalCallSchema = z.object({
  attempt: z.number().int().min(1),
  index: z.number().int().min(0),
  binding: z.string().min(1).max(300),
  argsJson: z.string().max(16 * 1024 * 1024),
  /** The runner lost the gateway that held this call and retries it here. */
  takeover: z.boolean().optional(),
});

export function internalRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, bindingCalls } = ctx;
  return async (app) => {
    app.post(
      '/internal/v1/code-runs/:id/calls',
      // Arguments may be as large as the engine's output cap (64 MiB).
      { preHandler: auth.requireInternal, bodyLimit: 67_108_864 + 65_536 },
      async (request, reply) => {
        const { id } = idParams.parse(request.params);
        const parsed = internalCallSchema.safeParse(request.body);
        if (!parsed.success) throw validationProblem(parsed.error);
        const { attempt, ...call } = parsed.data;
        const maxDepth = ctx.deps.config.ISLET_JSON_MAX_DEPTH;
        if (jsonDepthExceeds(call.argsJson, maxDepth))
          throw new HttpProblem('json-too-deep', `the call's arguments nest deeper than ${maxDepth} levels`);
        const served = await bindingCalls.serve(id, attempt, call, clientGone(reply));
        if (!served) throw new HttpProblem('not-found', `no code run ${id}`);
        return served;
      },
    );
  };
}
