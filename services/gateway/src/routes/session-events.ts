/**
 * `GET /v1/sessions/:sessionId/events`: Server-Sent Events for a whole session, what the console's
 * session page shows live. First a `run` event for each of the session's latest runs (oldest
 * first), then one whenever a run appears (run creation publishes the session's index key on
 * `islet:session-runs`) or one of its unfinished runs changes (its own run-events message). Each
 * `run` event is a summary: id, status, reason (the description), times and the failure reason.
 * After the snapshot a `ready` event. Nothing to resume: a reconnecting client gets the snapshot again.
 */

import { keys } from '@islet/core';
import { isFinalStatus } from '@islet/protocol';
import type { StoredRun } from '@islet/runs';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import { sessionIdSchema } from '../session-id.ts';
import type { RouteContext } from './context.ts';
import { openEventStream, takeStreamSlot } from './sse-stream.ts';

const SNAPSHOT_RUNS = 200;
const HEARTBEAT_MS = 15_000;
/** Slot leases are renewed at least this often (well inside SSE_LEASE_MS), as in events.ts. */
const RENEW_MS = 10_000;
const params = z.object({ sessionId: sessionIdSchema });

export function summary(run: StoredRun) {
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
  // The same per-tenant budget of open streams as the run streams (a console tab holds one).
  const slots = deps.sseSlots;
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
        const slot = await takeStreamSlot(slots, caller.tenantId, deps.config.ISLET_SSE_STREAMS_PER_TENANT);
        let renewed = Date.now();
        const { res, signal, abort } = openEventStream(reply, ctx.closing, {
          caller,
          keyWatch: auth.keyWatch,
        });
        let wake: () => void = () => {};
        let dirty = true;
        const poke = () => {
          dirty = true;
          wake();
        };
        const offs = new Map<string, () => void>();
        offs.set(index, deps.hub.listen(index, poke));
        const seen = new Map<string, number>();
        let since = '-inf';
        let lastWrite = Date.now();
        const send = (run: StoredRun) => {
          if (seen.get(run.id) === run.updatedAt) return;
          seen.set(run.id, run.updatedAt);
          res.write(`event: run\ndata: ${JSON.stringify(summary(run))}\n\n`);
          lastWrite = Date.now();
          if (isFinalStatus(run.status)) {
            offs.get(run.id)?.();
            offs.delete(run.id);
          } else if (!offs.has(run.id)) offs.set(run.id, deps.hub.listen(run.id, poke));
        };
        try {
          res.write('retry: 1000\n\n');
          // Latest first from Redis, sent oldest first; later rounds read only what is newer.
          const latest = await deps.runs.sessionEntries(caller.tenantId, sessionId, {
            latest: SNAPSHOT_RUNS,
          });
          const ids = latest.map((e) => e.id);
          const newest = latest.at(-1);
          if (newest) since = newest.score;
          for (const run of await Promise.all(ids.map((id) => deps.runs.get(id)))) if (mine(run)) send(run);
          // Tells the client the snapshot is complete (an empty session sends nothing else).
          res.write('event: ready\ndata: {}\n\n');
          dirty = false;
          signal.addEventListener('abort', () => wake(), { once: true });
          while (!signal.aborted) {
            if (!dirty) {
              await new Promise<void>((resolve) => {
                const timer = setTimeout(resolve, 2000);
                wake = () => {
                  clearTimeout(timer);
                  resolve();
                };
              });
            }
            if (signal.aborted) break;
            if (Date.now() - renewed >= RENEW_MS) {
              await slot.renew();
              renewed = Date.now();
            }
            dirty = false;
            const fresh = await deps.runs.sessionEntries(caller.tenantId, sessionId, { since });
            const check = new Set([...offs.keys()].filter((k) => k !== index));
            for (const entry of fresh) {
              check.add(entry.id);
              since = entry.score;
            }
            const runs = await Promise.all([...check].map((id) => deps.runs.get(id)));
            for (const run of runs) if (mine(run)) send(run);
            if (Date.now() - lastWrite >= HEARTBEAT_MS) {
              res.write(': heartbeat\n\n');
              lastWrite = Date.now();
            }
          }
        } catch (err) {
          request.log.warn({ err, sessionId }, 'session event stream broke off');
        } finally {
          for (const off of offs.values()) off();
          ctx.closing.removeEventListener('abort', abort);
          res.end();
          await slot
            .release()
            .catch((err: unknown) => request.log.warn({ err }, 'session stream slot not released'));
        }
      },
    );
  };
}
