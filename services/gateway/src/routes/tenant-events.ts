/**
 * `GET /v1/events`: the tenant's live feed as Server-Sent Events, what the console's runs table
 * and decisions inbox draw from. Events:
 * - `run`: a run summary (as `GET /v1/runs` lists it) when a run is created, changes status
 *   (Running, Waiting) or ends;
 * - `decision` (keys with the `decisions` scope): a decision asked or answered, with what a person
 *   needs to answer it (the App's name, the tool, the run's description, a code excerpt, the
 *   arguments, the justification, the true deadline); `state` says whether it is still pending;
 * - `ready` once the stream listens; `key-revoked` before it ends for a revoked key.
 * Creations, ends and decisions come from the tenant's feed (`@islet/runs` run-index: written in
 * the same scripts as the changes), so the SSE `id` is the feed's and `Last-Event-ID` resumes on any
 * replica; status changes between are read from the runs' records as their event streams move
 * (no `id`). The stream marks the tenant's feed listened to while it lasts (`@islet/runs`
 * stream-listeners-store.ts): creates and ends nobody listens to are not announced. Same walls as
 * the lists: a principal sees its own runs. Bounded like the other streams
 * (ISLET_SSE_STREAMS_PER_KEY and _PER_TENANT, 429 past them).
 */

import { principalOf } from '@islet/core';
import { isFinalStatus } from '@islet/protocol';
import {
  type DecisionRecord,
  type RunSummary,
  STREAM_LISTENER_REFRESH_MS,
  type StoredRun,
} from '@islet/runs';
import type { FastifyPluginAsync } from 'fastify';
import { type Caller, callerOf } from '../auth.ts';
import { HttpProblem } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { openSlottedStream } from './sse-stream.ts';

const STREAM_ID = /^\d+-\d+$/;
/** Lines shown around the call in a decision's code excerpt. */
const EXCERPT_LINES = 3;

/** The program lines around the first use of the called tool (or its start), for a person to read. */
function codeExcerpt(code: string, tool: string): { startLine: number; text: string } {
  const lines = code.split('\n');
  const at = tool ? lines.findIndex((l) => l.includes(tool)) : -1;
  const center = Math.max(0, at);
  const from = Math.max(0, center - EXCERPT_LINES);
  const to = Math.min(lines.length, center + EXCERPT_LINES + 1);
  return { startLine: from + 1, text: lines.slice(from, to).join('\n') };
}

/** A decision as the inbox shows it. */
function decisionItem(decision: DecisionRecord, run: StoredRun) {
  const request = decision.request;
  const [connectionId = '', tool = ''] = request.capability.target.split('/');
  const binding = run.request.bindings.find((b) => b.connectionId === connectionId && b.name === tool);
  const limits = run.request.limits;
  const timeoutMs = limits ? limits.timeoutMs : (run.request.timeoutMs ?? null);
  // The run's own budget ends it first when waiting counts against it (run_code's elapsed time).
  const budgetEnd =
    timeoutMs !== null && (run.request.timeBudget ?? 'elapsed') === 'elapsed'
      ? run.createdAt + timeoutMs
      : undefined;
  return {
    id: `${decision.runId}:${decision.index}`,
    state: decision.state,
    runId: decision.runId,
    index: decision.index,
    action: request.capability.action,
    app:
      request.capability.action === 'apps.call'
        ? { connectionId, name: binding?.connectionName ?? connectionId }
        : undefined,
    tool: request.capability.action === 'apps.call' ? (binding?.name ?? tool) : request.capability.target,
    description: run.description,
    sessionId: run.session,
    principal: run.principal,
    code: codeExcerpt(run.code, binding ? (binding.binding.split('.').at(-1) ?? tool) : tool),
    arguments: request.app?.arguments ?? null,
    justification: request.justification ?? run.request.justification,
    approval: request.approval,
    requestedAt: request.requestedAt,
    deadline: budgetEnd !== undefined ? Math.min(budgetEnd, request.expiresAt) : request.expiresAt,
  };
}

export function tenantEventsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, deps } = ctx;
  return async (app) => {
    app.get(
      '/v1/events',
      { preHandler: auth.requireScopes('apps.use', 'sessions.read') },
      async (request, reply) => {
        const caller = callerOf(request);
        const tenant = caller.tenantId;
        const q = request.query as Record<string, unknown>;
        for (const name of Object.keys(q))
          if (name !== 'lastEventId')
            throw new HttpProblem(
              'validation',
              `query parameter ${name}: unknown parameter (known: lastEventId)`,
              {
                parameter: name,
              },
            );
        const header = request.headers['last-event-id'];
        const asked =
          typeof header === 'string' ? header : typeof q.lastEventId === 'string' ? q.lastEventId : '';
        if (asked !== '' && !STREAM_ID.test(asked))
          throw new HttpProblem('validation', 'Last-Event-ID must be an event id from this stream', {
            parameter: 'lastEventId',
          });
        const stream = await openSlottedStream(ctx, request, reply, caller);
        const visible = (s: { principal?: string | undefined }) =>
          seesAll(caller) || s.principal === principalOf(caller);
        const decisionsToo = caller.scopes.includes('decisions');
        const offs = new Map<string, () => void>();
        // Marked before anything is read: creates announce their feed entries from here on. A run
        // created unannounced (no stream listened) ends unannounced on the feed too, so the runs in
        // flight now are followed on their own channel, whose end message always comes.
        for (const id of await deps.streamListeners.markFeed(tenant))
          offs.set(id, deps.hub.listen(id, stream.poke));
        let markedAt = Date.now();
        offs.set('feed', await deps.hub.listenFeed(tenant, stream.poke));
        // A run's move to Running is published as progress, for SSE readers only.
        const unfollow = await deps.hub.followProgress();
        // Runs shown not yet ended: their records' status moves without the feed.
        const shown = new Map<string, string>();
        const sendRun = (s: RunSummary, id?: string) => {
          const changed = shown.get(s.id) !== s.status;
          if (!changed && id === undefined) return;
          stream.write(`${id ? `id: ${id}\n` : ''}event: run\ndata: ${JSON.stringify(s)}\n\n`);
          if (isFinalStatus(s.status)) {
            shown.delete(s.id);
            offs.get(s.id)?.();
            offs.delete(s.id);
          } else {
            shown.set(s.id, s.status);
            if (!offs.has(s.id)) offs.set(s.id, deps.hub.listen(s.id, stream.poke));
          }
        };
        try {
          let last = asked || (await deps.runIndex.feedHead(tenant));
          stream.write('retry: 1000\n\n');
          stream.write('event: ready\ndata: {}\n\n');
          stream.poke();
          while (!stream.signal.aborted) {
            await stream.wait(2000);
            if (stream.signal.aborted) break;
            await stream.tick();
            if (Date.now() - markedAt >= STREAM_LISTENER_REFRESH_MS) {
              markedAt = Date.now();
              await deps.streamListeners.refreshFeed(tenant);
            }
            const entries = await deps.runIndex.readFeed(tenant, last);
            const runIds = [...new Set(entries.filter((e) => e.type === 'run').map((e) => e.ref))];
            const summaries = new Map(
              (await deps.runIndex.summaries(tenant, runIds)).map((s) => [s.id, s] as const),
            );
            for (const entry of entries) {
              last = entry.id;
              if (entry.type === 'run') {
                const s = summaries.get(entry.ref);
                if (s && visible(s)) sendRun(s, entry.id);
              } else if (entry.type === 'decision' && decisionsToo) {
                const cut = entry.ref.lastIndexOf(':');
                const runId = entry.ref.slice(0, cut);
                const [decision, run] = await Promise.all([
                  deps.decisions.get(runId, Number(entry.ref.slice(cut + 1))),
                  deps.runs.get(runId),
                ]);
                if (!decision || !run || run.tenant !== tenant || !visible(run)) continue;
                stream.write(
                  `id: ${entry.id}\nevent: decision\ndata: ${JSON.stringify(decisionItem(decision, run))}\n\n`,
                );
              }
            }
            // Runs shown not yet ended whose status may have moved (their own event streams woke us).
            const pending = [...shown.keys()].filter((id) => !summaries.has(id));
            for (const s of await deps.runIndex.summaries(tenant, pending)) sendRun(s);
          }
        } catch (err) {
          request.log.warn({ err }, 'tenant event stream broke off');
        } finally {
          for (const off of offs.values()) off();
          unfollow();
          await stream.close();
        }
      },
    );
  };
}

function seesAll(caller: Caller): boolean {
  return caller.scopes.includes('sessions.admin') || caller.scopes.includes('platform.admin');
}
