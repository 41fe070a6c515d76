/**
 * `GET /v1/code-runs/:id/events`: Server-Sent Events from the run's Redis stream. The SSE `id` is
 * the stream entry id, so `Last-Event-ID` resumes exactly after the last event a client saw, on
 * any gateway replica. The stream ends after the `end` event.
 */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';
import { openEventStream, takeStreamSlot } from './sse-stream.ts';

const STREAM_ID = /^\d+-\d+$/;
const HEARTBEAT_MS = 15_000;
/** Slot leases are renewed at least this often (well inside SSE_LEASE_MS). */
const RENEW_MS = 10_000;

export function eventsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, runsService, deps } = ctx;
  const slots = deps.sseSlots;
  return async (app) => {
    app.get(
      '/v1/code-runs/:id/events',
      { preHandler: auth.requireScopes('apps.use') },
      async (request, reply) => {
        const { id } = idParams.parse(request.params);
        const caller = callerOf(request);
        await runsService.own(caller, id);
        const q = request.query as Record<string, unknown>;
        const header = request.headers['last-event-id'];
        const resume =
          typeof header === 'string' ? header : typeof q.lastEventId === 'string' ? q.lastEventId : '0';
        if (resume !== '0' && !STREAM_ID.test(resume))
          throw new HttpProblem('validation', 'Last-Event-ID must be an event id from this stream');
        const slot = await takeStreamSlot(slots, caller.tenantId, deps.config.ISLET_SSE_STREAMS_PER_TENANT);

        const { res, signal, abort } = openEventStream(reply, ctx.closing, {
          caller,
          keyWatch: auth.keyWatch,
        });
        let last = resume;
        let lastWrite = Date.now();
        let renewed = Date.now();
        try {
          res.write('retry: 1000\n\n');
          while (!signal.aborted) {
            if (Date.now() - renewed >= RENEW_MS) {
              await slot.renew();
              renewed = Date.now();
            }
            const events = await deps.runs.readEvents(id, last);
            let ended = false;
            for (const e of events) {
              res.write(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`);
              last = e.id;
              lastWrite = Date.now();
              if (e.type === 'end') ended = true;
            }
            if (ended) break;
            if (events.length === 0) {
              if (Date.now() - lastWrite >= HEARTBEAT_MS) {
                res.write(': heartbeat\n\n');
                lastWrite = Date.now();
              }
              await deps.hub.nextChange(id, 2000, signal);
            }
          }
        } catch (err) {
          request.log.warn({ err, runId: id }, 'event stream broke off');
        } finally {
          // The closing signal outlives every stream: do not leave a listener on it.
          ctx.closing.removeEventListener('abort', abort);
          res.end();
          await slot
            .release()
            .catch((err: unknown) => request.log.warn({ err }, 'event stream slot not released'));
        }
      },
    );
  };
}
