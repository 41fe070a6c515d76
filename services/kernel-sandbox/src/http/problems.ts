/** problem+json replies for the kernel-sandbox routes, from the shared table in @islet/protocol. */
import { PROBLEM_CONTENT_TYPE, type ProblemCode, problem } from '@islet/protocol';
import type { FastifyReply } from 'fastify';
import type { WorkspaceErrorCode } from '../workspace-errors.ts';

export function sendProblem(
  reply: FastifyReply,
  code: ProblemCode,
  detail?: string,
  extensions: Record<string, unknown> = {},
): FastifyReply {
  const body = problem(code, detail, extensions);
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** Workspace errors are the caller's input, never a 500. `reason` repeats the store's stable code. */
export function workspaceProblem(
  reply: FastifyReply,
  code: WorkspaceErrorCode,
  message: string,
): FastifyReply {
  switch (code) {
    case 'not-found':
      return sendProblem(reply, 'not-found', message, { reason: code });
    case 'file-too-large':
      return sendProblem(reply, 'payload-too-large', message, { reason: code });
    case 'workspace-full':
      return sendProblem(reply, 'conflict', message, { reason: code });
    case 'is-directory':
      return sendProblem(reply, 'conflict', message, { reason: code });
    case 'unsupported-file-type':
      return sendProblem(reply, 'unsupported-file-type', message, { reason: code });
    case 'busy':
      reply.header('retry-after', '1');
      return sendProblem(reply, 'unavailable', message, { reason: code });
    case 'unavailable':
      reply.header('retry-after', '5');
      return sendProblem(reply, 'unavailable', 'workspace files are unavailable; try again', {
        reason: code,
      });
    case 'io-error':
      return sendProblem(reply, 'internal', 'the file operation failed', { reason: code });
    default:
      return sendProblem(reply, 'validation', message, { reason: code });
  }
}
