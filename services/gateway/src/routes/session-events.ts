/**
 * `GET /v1/sessions/:sessionId/events`: Server-Sent Events for a whole session, what the console's
 * session page shows live. First a `run` event for each of the session's latest runs (oldest
 * first), then one whenever a run appears (run creation publishes the session's index key on
 * `islet:session-runs`) or one of its unfinished runs changes (its own run-events or run-progress
 * message). Each
 * `run` event is a summary: id, status, reason (the description), times and the failure reason.
 * The stream marks the session listened to while it lasts (`@islet/runs` stream-listeners-store.ts):
 * a create publishes on `islet:session-runs` only then. After the snapshot a `ready` event. Nothing to resume: a reconnecting client gets the snapshot again.
 */

import { keys } from '@islet/core';
import { isFinalStatus } from '@islet/protocol';
import { STREAM_LISTENER_REFRESH_MS, type StoredRun } from '@islet/runs';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import { sessionIdSchema } from '../session-id.ts';
import type { RouteContext } from './context.ts';
import { openSlottedStream } from './sse-stream.ts';

const SNAPSHOT_RUNS = 200;
const params = z.object({ sessionId: sessionIdSchema });

function summary(run: StoredRun) {
  return {
    id: run.id,
    status: run.status,
    reason: run.description,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    ...(run.result?._tag === 'Failed' ? { failure: run.result.reason } : {}),
  };
}

export function sessionEventsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  return async (app) => {
    app.get(
      '/v1/sessions/:sessionId/events',
      { preHandler: auth.requireScopes('apps.use', 'sessions.read') },
      async (request, reply) => {
        const caller = callerOf(request);
        const { sessionId } = params.parse(request.params);
        // Another principal's session is not there for this caller (ownership.ts).
        if (!(await ctx.runsService.mayReadSession(caller, sessionId)))
          throw new HttpProblem('not-found', `no session ${sessionId}`);
        const mine = (run: StoredRun | null): run is StoredRun =>
          run !== null && run.tenant === caller.tenantId && ctx.runsService.mayRead(caller, run);
        const index = keys.sessionRuns(caller.tenantId, sessionId);
        const stream = await openSlottedStream(ctx, request, reply, caller);
        const offs = new Map<string, () => void>();
        // Marked before the snapshot is read: creates publish the session's index key from here on.
        await deps.streamListeners.markSession(caller.tenantId, sessionId);
        let markedAt = Date.now();
        offs.set(index, await deps.hub.listenSession(index, stream.poke));
        // A run's move to Running is published as progress, for SSE readers only.
        const unfollow = await deps.hub.followProgress();
        const seen = new Map<string, number>();
        let since = '-inf';
        const send = (run: StoredRun) => {
          if (seen.get(run.id) === run.updatedAt) return;
          seen.set(run.id, run.updatedAt);
          stream.write(`event: run\ndata: ${JSON.stringify(summary(run))}\n\n`);
          if (isFinalStatus(run.status)) {
            offs.get(run.id)?.();
            offs.delete(run.id);
          } else if (!offs.has(run.id)) {
            offs.set(run.id, deps.hub.listen(run.id, stream.poke));
            // A run created before the session's mark starts unannounced unless marked followed
            // (a start before the mark lands is read at the next re-check, 2 s at most).
            void deps.streamListeners.followRuns([run.id]).catch(() => {});
          }
        };
        try {
          stream.write('retry: 1000\n\n');
          // Latest first from Redis, sent oldest first; later rounds read only what is newer.
          const latest = await deps.runs.sessionEntries(caller.tenantId, sessionId, {
            latest: SNAPSHOT_RUNS,
          });
          const ids = latest.map((e) => e.id);
          const newest = latest.at(-1);
          if (newest) since = newest.score;
          for (const run of await Promise.all(ids.map((id) => deps.runs.get(id)))) if (mine(run)) send(run);
          // Tells the client the snapshot is complete (an empty session sends nothing else).
          stream.write('event: ready\ndata: {}\n\n');
          while (!stream.signal.aborted) {
            await stream.wait(2000);
            if (stream.signal.aborted) break;
            await stream.tick();
            if (Date.now() - markedAt >= STREAM_LISTENER_REFRESH_MS) {
              markedAt = Date.now();
              await deps.streamListeners.markSession(caller.tenantId, sessionId);
            }
            const fresh = await deps.runs.sessionEntries(caller.tenantId, sessionId, { since });
            const check = new Set([...offs.keys()].filter((k) => k !== index));
            for (const entry of fresh) {
              check.add(entry.id);
              since = entry.score;
            }
            const runs = await Promise.all([...check].map((id) => deps.runs.get(id)));
            for (const run of runs) if (mine(run)) send(run);
          }
        } catch (err) {
          request.log.warn({ err, sessionId }, 'session event stream broke off');
        } finally {
          for (const off of offs.values()) off();
          unfollow();
          await stream.close();
        }
      },
    );
  };
}
