/**
 * `/v1/sessions/{id}/files/*`: tenants put, get, list and delete their session's workspace files.
 * A fastify plugin with injected dependencies, registered encapsulated by `workspace.ts` (so the raw
 * body parser stays inside). A session of another tenant is simply not found (404, never 403).
 *
 *   PUT    /v1/sessions/:id/files/<path>   body = the file's bytes       → 201 { path, sizeBytes }
 *   GET    /v1/sessions/:id/files/<path>   → the bytes (application/octet-stream)
 *   GET    /v1/sessions/:id/files          → { files: [{ path, sizeBytes, modifiedAtMs }], nextCursor? }
 *                                            (?prefix=&limit=1..1000&cursor=<nextCursor of the last page>)
 *   DELETE /v1/sessions/:id/files/<path>   → 204, or 404 when there was no such file
 *
 * Every operation goes through the store's helper (openat2 beneath the workspace): a FIFO, socket
 * or device answers 409 `unsupported-file-type` at once, a symlink 400 `outside-workspace`.
 */
import {
  isWorkspaceError,
  MAX_LIST_LIMIT,
  type WorkspaceErrorCode,
  type WorkspaceStore,
} from '@islet/kernel-sandbox';
import { problem } from '@islet/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { HttpProblem, sendProblem } from '../problem-reply.ts';

/** Workspace errors are the caller's input, never a 500. `reason` repeats the store's stable code. */
function workspaceProblem(code: WorkspaceErrorCode, message: string): HttpProblem {
  const reason = { reason: code };
  switch (code) {
    case 'not-found':
      return new HttpProblem('not-found', message, reason);
    case 'file-too-large':
      return new HttpProblem('payload-too-large', message, reason);
    case 'workspace-full':
    case 'is-directory':
      return new HttpProblem('conflict', message, reason);
    case 'unsupported-file-type':
      return new HttpProblem('unsupported-file-type', message, reason);
    case 'busy':
      return new HttpProblem('unavailable', message, reason, { 'retry-after': '1' });
    case 'unavailable':
      return new HttpProblem('unavailable', 'workspace files are unavailable; try again', reason, {
        'retry-after': '5',
      });
    case 'io-error':
      return new HttpProblem('internal', 'the file operation failed', reason);
    default:
      return new HttpProblem('validation', message, reason);
  }
}

interface FilesRoutesDeps {
  /** Authentication preHandler (the gateway's API-key check); replies 401 itself. */
  authenticate: preHandlerHookHandler;
  /** The authenticated tenant's id. */
  resolveTenant: (request: FastifyRequest) => string | Promise<string>;
  store: WorkspaceStore;
  /** Largest request body, bytes. Default: the store's file limit (10 MiB). */
  maxBodyBytes?: number;
}

type Params = { id: string; '*'?: string };

export function filesRoutes(deps: FilesRoutesDeps) {
  const bodyLimit = deps.maxBodyBytes ?? deps.store.limits.maxFileBytes ?? 10 * 1024 * 1024;
  return async function filesPlugin(app: FastifyInstance): Promise<void> {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => done(null, body));

    const handle = async <T>(reply: FastifyReply, fn: () => Promise<T>) => {
      try {
        return await fn();
      } catch (err) {
        if (isWorkspaceError(err)) {
          const p = workspaceProblem(err.code, err.message);
          return sendProblem(reply, p.problem, p.headers);
        }
        throw err;
      }
    };
    const workspace = async (request: FastifyRequest<{ Params: Params }>) => {
      const tenant = await deps.resolveTenant(request);
      return deps.store.workspace(tenant, request.params.id);
    };

    app.put<{ Params: Params }>(
      '/v1/sessions/:id/files/*',
      { preHandler: deps.authenticate, bodyLimit },
      async (request, reply) =>
        handle(reply, async () => {
          const body = request.body;
          const data = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
          const ws = await workspace(request);
          const entry = await ws.write(request.params['*'] ?? '', data);
          return reply.code(201).send({ path: entry.path, sizeBytes: entry.sizeBytes });
        }),
    );

    type ListQuery = { prefix?: string; cursor?: string; limit?: string };
    const listFiles = async (
      request: FastifyRequest<{ Params: Params; Querystring: ListQuery }>,
      reply: FastifyReply,
    ) => {
      const tenant = await deps.resolveTenant(request);
      if (!(await deps.store.exists(tenant, request.params.id))) {
        return sendProblem(reply, problem('not-found', 'no such session'));
      }
      const q = request.query ?? {};
      let limit: number | undefined;
      if (q.limit !== undefined) {
        limit = /^\d{1,5}$/.test(q.limit) ? Number(q.limit) : Number.NaN;
        if (!(limit >= 1 && limit <= MAX_LIST_LIMIT))
          return sendProblem(
            reply,
            problem('validation', `invalid limit: expected an integer from 1 to ${MAX_LIST_LIMIT}`),
          );
      }
      const page = await deps.store.workspace(tenant, request.params.id).listPage(q.prefix ?? '', {
        ...(q.cursor ? { cursor: q.cursor } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      return reply.send(page);
    };

    app.get<{ Params: Params; Querystring: ListQuery }>(
      '/v1/sessions/:id/files',
      { preHandler: deps.authenticate },
      async (request, reply) => handle(reply, () => listFiles(request, reply)),
    );

    app.get<{ Params: Params; Querystring: ListQuery }>(
      '/v1/sessions/:id/files/*',
      { preHandler: deps.authenticate },
      async (request, reply) =>
        handle(reply, async () => {
          const path = request.params['*'] ?? '';
          if (path === '') return listFiles(request, reply);
          const data = await (await workspace(request)).read(path);
          return reply.type('application/octet-stream').send(data);
        }),
    );

    app.delete<{ Params: Params }>(
      '/v1/sessions/:id/files/*',
      { preHandler: deps.authenticate },
      async (request, reply) =>
        handle(reply, async () => {
          const removed = await (await workspace(request)).remove(request.params['*'] ?? '');
          if (!removed) return sendProblem(reply, problem('not-found', 'no such file'));
          return reply.code(204).send();
        }),
    );
  };
}
