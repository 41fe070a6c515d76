/**
 * Decisions. `GET /v1/decisions`: the caller's tenant's pending decisions, each in the
 * Code Mode document's request shape. `POST /v1/code-runs/:id/decisions` `{index, allow, input?, scope?, reason?}`:
 * answers one (index -1 = the run's wider-access request); once, a second answer is a 409; another
 * tenant's run is a 404. Both need the `decisions` scope.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { callerOf } from '../auth.ts';
import { createDecisionsService } from '../decisions-service.ts';
import { validationProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

export const decisionAnswerSchema = z
  .object({
    index: z.number().int().min(-1),
    allow: z.boolean(),
    input: z.unknown().optional(),
    /**
     * `session`: allow this call and every later call of the same tool in the run's session
     * without asking again (App calls only; wider access is asked for each run). Default `once`.
     */
    scope: z.enum(['once', 'session']).optional(),
    /** A denial's reason: the program receives it in its AppCallDenied error. */
    reason: z.string().min(1).max(1000).optional(),
  })
  .strict()
  .refine((a) => a.reason === undefined || !a.allow, {
    message: 'reason is for a denial (allow: false)',
    path: ['reason'],
  });

export function decisionsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps, runsService } = ctx;
  const service = createDecisionsService(deps, runsService);
  return async (app) => {
    app.get('/v1/decisions', { preHandler: auth.requireScopes('decisions') }, async (request) => ({
      items: await service.listPending(callerOf(request)),
    }));

    app.post(
      '/v1/code-runs/:id/decisions',
      { preHandler: auth.requireScopes('decisions') },
      async (request, reply) => {
        const { id } = idParams.parse(request.params);
        const parsed = decisionAnswerSchema.safeParse(request.body);
        if (!parsed.success) throw validationProblem(parsed.error, '', decisionAnswerSchema);
        const view = await service.answer(callerOf(request), id, parsed.data);
        return reply.code(200).send(view);
      },
    );
  };
}
