/**
 * Session workspace files (`/v1/sessions/{id}/files/*`) and the run_code skill
 * (`POST /v1/skills/run_code`): the route plugins of `files.ts` and `skills.ts`, registered
 * encapsulated (their raw-body parser stays inside) with the gateway's API-key check (scope
 * `apps.use`) and the key's tenant, over kernel-sandbox's workspace store. Workspaces are
 * `<ISLET_WORKSPACE_ROOT>/<tenant>/<session>`, so another tenant's session is simply not there (404).
 */
import { WorkspaceStore } from '@islet/kernel-sandbox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import { checkSessionId } from '../session-id.ts';
import { createSkillsService } from '../skills-service.ts';
import type { RouteContext } from './context.ts';
import { filesRoutes } from './files.ts';
import { bodyField, skillRoutes } from './skills.ts';

/** The body's optional `sessionId`, which must be a string when present. */
function sessionIdOf(request: FastifyRequest): { sessionId?: string } {
  const sessionId = bodyField(request, 'sessionId');
  if (sessionId === undefined) return {};
  if (typeof sessionId !== 'string')
    throw new HttpProblem('validation', 'invalid sessionId: expected a string');
  return { sessionId };
}

export function workspaceRoutes(ctx: RouteContext): FastifyPluginAsync {
  return async (app) => {
    const store = new WorkspaceStore({ root: ctx.deps.config.ISLET_WORKSPACE_ROOT });
    const requireKey = ctx.auth.requireScopes('apps.use');
    // A session's files are its owner's: the first file claims a free session, as a first run does.
    const authenticate = (async (request: FastifyRequest, reply: FastifyReply) => {
      await requireKey(request, reply);
      const session = (request.params as { id?: unknown }).id;
      if (typeof session === 'string') {
        checkSessionId(session);
        await ctx.runsService.claimSession(callerOf(request), session);
      }
    }) as unknown as preHandlerHookHandler;
    const resolveTenant = (request: FastifyRequest) => callerOf(request).tenantId;
    const skills = createSkillsService(ctx.deps, ctx.closing, ctx.runsService.claimSession);
    app.addHook('onClose', async () => skills.close());
    await app.register(filesRoutes({ authenticate, resolveTenant, store }));
    await app.register(
      skillRoutes({
        authenticate,
        resolveTenant,
        resolveMode: (request) => skills.modeFor(bodyField(request, 'sandbox_permissions')),
        extraFields: ['sessionId', 'sandbox_permissions'],
        execute: (skill, { mode }, request) =>
          skills.execute({ caller: callerOf(request), mode, skill, ...sessionIdOf(request) }),
      }),
    );
  };
}
