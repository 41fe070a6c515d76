import { Readable } from 'node:stream';
import type { BindingOutcome } from '@islet/engine';
import { openedResultJson, operationIdFor } from '@islet/runs';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { callerOf, rateLimitPassed } from '../auth.ts';
import { inputRequiredOutcome, inputRequiredSchema } from '../input-required.ts';
import { HttpProblem, unknownFieldsProblem, validationProblem } from '../problem-reply.ts';
import { boundRecord, logText, recordQuerySchema } from '../record-bounds.ts';
import {
  parseRunCodeFields,
  plainRunBody,
  RUN_FIELD_HINTS,
  RUN_FIELDS,
  runPlacementSchema,
  runtimeCapabilities,
} from '../run-request.ts';
import { sessionIdSchema } from '../session-id.ts';
import { createRequestGone } from '../wait-signal.ts';
import { sendSubmitRecord } from '../waited-reply.ts';
import type { RouteContext } from './context.ts';
import { idParams } from './params.ts';

const sessionParams = z.object({ sessionId: sessionIdSchema });
const callParams = idParams.extend({ index: z.coerce.number().int().min(0) });
export const clientAnswerSchema = z.union([
  z.object({ result: z.unknown() }).strict(),
  z
    .object({
      error: z.object({ message: z.string().max(10_000), reason: z.string().max(200).optional() }),
    })
    .strict(),
  inputRequiredSchema,
]);

export const sessionRunsQuerySchema = z.object({
  cursor: z
    .string()
    .regex(/^\d+:[\w-]{1,200}$/)
    .optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

function body(raw: unknown): Record<string, unknown> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new HttpProblem('validation', 'the body must be a JSON object');
  return raw as Record<string, unknown>;
}

/** `Prefer: wait=N` (RFC 7240), capped by ISLET_PREFER_WAIT_MAX_SECONDS. */
function preferWaitSeconds(header: unknown, max: number): number {
  if (typeof header !== 'string') return 0;
  const m = /(?:^|[,;\s])wait=(\d+)/i.exec(header);
  return m ? Math.min(Number(m[1]), max) : 0;
}

export function runsRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, runsService, deps } = ctx;
  return async (app) => {
    // The rate-limit count is made in the run's admission, or (with an Idempotency-Key) its round
    // trip overlaps the body's checks: a submit's latency is a row of round trips (auth.ts).
    const preHandler = auth.requireScopesOverlappingRateLimit('apps.use');
    // A waiting submit's end by its client or the app's close, without an AbortController a request.
    const requestGone = createRequestGone(ctx.closing);
    const capabilities = runtimeCapabilities(deps.config);
    /** The contract's refusal first, then the placement's, as zod reports them. */
    const zodChecked = (b: Record<string, unknown>, asked: Record<string, unknown>) => {
      const fields = parseRunCodeFields(asked, capabilities);
      if (!fields.ok) throw new HttpProblem('validation', fields.refusal, { refusal: fields.refusal });
      const placement = runPlacementSchema.safeParse(b);
      if (!placement.success) throw validationProblem(placement.error);
      return { fields: fields.value, placement: placement.data };
    };
    // A submit answered before its admission counted it is counted as it is answered.
    const onSend = (
      request: FastifyRequest,
      _reply: unknown,
      payload: unknown,
      done: (err: null, payload: unknown) => void,
    ) => {
      auth.countIfUncounted(request);
      done(null, payload);
    };
    app.post('/v1/runs', { preHandler, onSend }, async (request, reply) => {
      const caller = callerOf(request);
      const b = body(request.body);
      // No deadline: only for a principal that is another part of the platform (a workflow); a
      // chat's run_code call gets the contract's refusal for a non-positive timeoutMs.
      const noDeadline = b.timeoutMs === null && caller.scopes.includes('workflows');
      const asked = noDeadline ? { ...b, timeoutMs: undefined } : b;
      // A plainly valid body skips zod (the same values); any other is zod's, with its refusals.
      const checked = plainRunBody(asked, capabilities) ?? zodChecked(b, asked);
      // After the contract's own refusals, so each request that has one gets exactly its text.
      const unknown = unknownFieldsProblem(b, RUN_FIELDS, RUN_FIELD_HINTS);
      if (unknown) throw unknown;
      const idem = request.headers['idempotency-key'];
      const wait = preferWaitSeconds(request.headers.prefer, deps.config.ISLET_PREFER_WAIT_MAX_SECONDS);
      const limited = rateLimitPassed(request);
      if (limited) await limited;
      const { run, created } = await runsService.submit(
        caller,
        { fields: checked.fields, ...checked.placement, ...(noDeadline ? { noDeadline } : {}) },
        typeof idem === 'string' ? idem : undefined,
        { waits: wait > 0, ...(request.rateCount ? { rate: request.rateCount } : {}) },
      );
      reply.header('location', `/v1/code-runs/${run.id}`);
      if (!created) reply.header('idempotent-replayed', 'true');
      let current = run;
      if (wait > 0) {
        // A run this request just wrote, still Running: no need to read it before anything happens.
        const writtenAt = created && run.status === 'Running' ? run.createdAt : undefined;
        // Set before the wait, in the submit's turn, not in the pushed end's (the turn on the path
        // to the response's first bytes, round 50 `end-turn`); a wait that fails takes it back, so
        // its problem does not say the wait was applied, as before.
        reply.header('preference-applied', `wait=${wait}`);
        try {
          current =
            (await runsService.waitForEnd(run.id, wait * 1000, requestGone.gone(reply), writtenAt, run)) ??
            run;
        } catch (err) {
          reply.removeHeader('preference-applied');
          throw err;
        }
      }
      // A pushed end's record is built at once (its journal came with it), else read.
      const inHand = runsService.recordInHand(current);
      const record = inHand ?? (await runsService.record(current));
      // A pushed end's result as its JSON text, spliced into the answer (round 51 `gateway-end`):
      // the same bytes and content type fastify gives the record, without stringifying the result;
      // the record sent as its text, past fastify's serialization steps (waited-reply.ts).
      const resultJson = (inHand?.result && openedResultJson(inHand.result)) || undefined;
      return sendSubmitRecord(reply, record, resultJson);
    });

    app.get('/v1/code-runs/:id', { preHandler: auth.requireScopes('apps.use') }, async (request) => {
      const { id } = idParams.parse(request.params);
      const q = recordQuerySchema.safeParse(request.query);
      if (!q.success) throw validationProblem(q.error, 'query.');
      const caller = callerOf(request);
      const run = await runsService.own(caller, id);
      // "You only see the programs of your own Sessions" (sessions.admin sees the tenant's).
      if (!runsService.mayRead(caller, run)) throw new HttpProblem('not-found', `no code run ${id}`);
      const record = await runsService.record(run);
      return q.data.maxLogBytes === undefined ? record : boundRecord(record, q.data.maxLogBytes);
    });

    // The full output as text, streamed: what a bounded record's reader downloads.
    app.get(
      '/v1/code-runs/:id/logs',
      { preHandler: auth.requireScopes('apps.use') },
      async (request, reply) => {
        const { id } = idParams.parse(request.params);
        const caller = callerOf(request);
        const run = await runsService.own(caller, id);
        if (!runsService.mayRead(caller, run)) throw new HttpProblem('not-found', `no code run ${id}`);
        const logs = (await runsService.record(run)).result?.logs ?? [];
        return reply
          .type('text/plain; charset=utf-8')
          .header('content-disposition', `attachment; filename="${id}.log"`)
          .send(Readable.from(logText(logs)));
      },
    );

    app.get(
      '/v1/sessions/:sessionId/code-runs',
      { preHandler: auth.requireScopes('apps.use', 'sessions.read') },
      async (request) => {
        const caller = callerOf(request);
        const { sessionId } = sessionParams.parse(request.params);
        const q = sessionRunsQuerySchema.safeParse(request.query);
        if (!q.success) throw validationProblem(q.error, 'query.');
        // A session is its opener's: another principal sees it empty, unless it has sessions.admin.
        if (!(await runsService.mayReadSession(caller, sessionId))) return { items: [], nextCursor: null };
        const page = await deps.runs.listSession(caller.tenantId, sessionId, q.data.cursor, q.data.limit);
        // The page's records are read concurrently (one round trip's wait, not one per run); order is kept.
        const found = await Promise.all(
          page.ids.map(async (id) => {
            const run = await deps.runs.get(id);
            if (run && run.tenant === caller.tenantId && runsService.mayRead(caller, run))
              return runsService.record(run);
            // A record past its retention is gone: drop it from the session's index too. A skill
            // has no record (it is listed by GET /v1/runs, which prunes it with its summary).
            if (!run && !id.startsWith('skill-'))
              await deps.runs.forgetSessionRun(caller.tenantId, sessionId, id);
            return undefined;
          }),
        );
        return { items: found.filter((r) => r !== undefined), nextCursor: page.next };
      },
    );

    app.post(
      '/v1/code-runs/:id/cancel',
      { preHandler: auth.requireScopes('apps.use') },
      async (request, reply) => {
        const { id } = idParams.parse(request.params);
        const run = await runsService.cancel(callerOf(request), id);
        return reply.code(202).send(await runsService.record(run));
      },
    );

    const answerMax = deps.config.ISLET_APP_ANSWER_MAX_BYTES;
    app.post(
      '/v1/code-runs/:id/calls/:index/result',
      // A client's answer is a tool result: capped like an http App's answer (plus its envelope).
      { preHandler: auth.requireScopes('apps.use'), bodyLimit: answerMax + 65_536 },
      async (request, reply) => {
        const caller = callerOf(request);
        const { id, index } = callParams.parse(request.params);
        await runsService.own(caller, id);
        const parsed = clientAnswerSchema.safeParse(request.body);
        if (!parsed.success)
          throw new HttpProblem(
            'validation',
            'send {"result": <value>}, {"error": {"message": "..."}} or {"inputRequired": {"message": "..."}}',
          );
        // The outcome is built and checked in full before the call's waiting marker is taken:
        // a refused answer leaves the call pending for a correct one.
        const answer = parsed.data;
        const outcome: BindingOutcome =
          'result' in answer
            ? { type: 'result', valueJson: JSON.stringify(answer.result ?? null) }
            : 'inputRequired' in answer
              ? inputRequiredOutcome(answer.inputRequired.message, operationIdFor(id, index))
              : {
                  type: 'error',
                  name: 'AppCallFailed',
                  message: answer.error.message,
                  details: { reason: answer.error.reason ?? 'client-error' },
                };
        if (outcome.type === 'result' && Buffer.byteLength(outcome.valueJson) > answerMax)
          throw new HttpProblem(
            'payload-too-large',
            `the result is larger than ${answerMax} bytes, the most a call may return; answer {"error": {"message": "..."}} instead`,
            { maxBytes: answerMax },
          );
        if ((await deps.clientCalls.deliver(id, index, outcome)) === 'not-pending')
          throw new HttpProblem('call-not-pending', `call ${index} of run ${id} is not waiting for a result`);
        return reply.code(202).send({ accepted: true });
      },
    );
  };
}
