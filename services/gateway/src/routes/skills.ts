/**
 * `POST /v1/skills/run_code`: validates the skill request (zod, the skill's inputSchema) and hands it
 * to an injected executor — in the cluster that enqueues it on the mode's BullMQ pool; in tests it
 * can be `runSkill` directly. Answers the executor's `{ success, output, error, exitCode, language }`.
 */
import {
  parseSkillRequest,
  problem,
  type SandboxMode,
  type SkillRequest,
  type SkillResult,
} from '@islet/protocol';
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { sendProblem } from '../problem-reply.ts';

/** A top-level field of the request's JSON body (one the host reads itself, e.g. `sessionId`). */
export function bodyField(request: FastifyRequest, name: string): unknown {
  const body = request.body;
  return body && typeof body === 'object' && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

interface SkillRunContext {
  tenant: string;
  /** The sandbox mode the tenant's skill runs use. */
  mode: SandboxMode;
}

interface SkillRoutesDeps {
  authenticate: preHandlerHookHandler;
  resolveTenant: (request: FastifyRequest) => string | Promise<string>;
  /** The mode for this tenant's skill runs. Default `workspace-write` (the skill writes locally). */
  resolveMode?: (request: FastifyRequest, tenant: string) => SandboxMode | Promise<SandboxMode>;
  /** `httpRequest` gives the executor the raw request (e.g. an optional `sessionId` in the body). */
  execute: (
    request: SkillRequest,
    context: SkillRunContext,
    httpRequest: FastifyRequest,
  ) => Promise<SkillResult>;
  /** Body fields the host reads itself besides the skill's own (unknown fields are refused). */
  extraFields?: readonly string[];
  /** Largest request body, bytes. Default 1048576 (1 MiB). */
  maxBodyBytes?: number;
}

export function skillRoutes(deps: SkillRoutesDeps) {
  return async function skillPlugin(app: FastifyInstance): Promise<void> {
    app.post(
      '/v1/skills/run_code',
      { preHandler: deps.authenticate, bodyLimit: deps.maxBodyBytes ?? 1024 * 1024 },
      async (request, reply) => {
        const parsed = parseSkillRequest(request.body, deps.extraFields);
        if (!parsed.ok)
          return sendProblem(reply, problem('validation', parsed.message, { errors: parsed.errors }));
        const tenant = await deps.resolveTenant(request);
        const mode = (await deps.resolveMode?.(request, tenant)) ?? 'workspace-write';
        const result = await deps.execute(parsed.value, { tenant, mode }, request);
        return reply.send(result);
      },
    );
  };
}
