/**
 * `GET /v1/code-runs/:id/events`: Server-Sent Events from the run's Redis stream. The SSE `id` is
 * the stream entry id, so `Last-Event-ID` resumes exactly after the last event a client saw, on
 * any gateway replica. The stream ends after the `end` event. While it is open its gateway follows
 * runs' progress (`islet:run-progress`: starts, calls, printed output), which no other reader needs.
 */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';
import { openSlottedStream } from './sse-stream.ts';

const STREAM_ID = /^\d+-\d+$/;

export function eventsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, runsService, deps } = ctx;
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
        const stream = await openSlottedStream(ctx, request, reply, caller);
        let last = resume;
        let unfollow: (() => void) | undefined;
        try {
          // The run's start, calls and output are published for SSE readers only: listened to
          // from before the first read, so none is missed; the run marked followed first, or a run
          // nobody watched at its create would start unannounced (includes/begin-attempt.lua).
          await deps.streamListeners.followRuns([id]);
          unfollow = await deps.hub.followProgress();
          stream.write('retry: 1000\n\n');
          while (!stream.signal.aborted) {
            await stream.tick();
            const events = await deps.runs.readEvents(id, last);
            let ended = false;
            for (const e of events) {
              stream.write(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`);
              last = e.id;
              if (e.type === 'end') ended = true;
            }
            if (ended) break;
            if (events.length === 0) await deps.hub.nextChange(id, 2000, stream.signal);
          }
        } catch (err) {
          request.log.warn({ err, runId: id }, 'event stream broke off');
        } finally {
          unfollow?.();
          await stream.close();
        }
      },
    );
  };
}
