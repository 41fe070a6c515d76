/**
 * The runner → gateway channel, authenticated with ISLET_INTERNAL_TOKEN. Any replica serves any
 * call; a call's answer is sent only after the journal holds its outcome.
 * - `POST /internal/v1/code-runs/:id/calls`: one call per request.
 * - `POST /internal/v1/code-runs/:id/call-batch`: the calls a program made together (a
 *   `Promise.all`), one request; the answer is NDJSON, one line per call as soon as it is
 *   journaled (the program's `Promise.race` still sees the first), lines finished together written
 *   together. One request instead of a hundred: the per-request work (routing, auth, headers, a
 *   socket write each way) was most of a parallel call's gateway CPU.
 */
import type { BindingCall } from '@islet/engine';
import { type Problem, type ProblemCode, problem } from '@islet/protocol';
import type { FastifyPluginAsync } from 'fastify';
import { servedJson } from '../binding-calls.ts';
import { readInternalBatch, readInternalCall } from '../internal-call-body.ts';
import { jsonDepthExceeds } from '../json-depth.ts';
import { clientGone, HttpProblem, isRedisTransient } from '../problem-reply.ts';
import type { RouteContext } from './context.ts';
import { idOf, idParams } from './params.ts';

/** One line of a batch's answer: the call's served body, or its problem with the status a single call would get. */
type BatchLine = { index: number; status: number; problem: Problem };

/** A refused call's line, as JSON. */
const refused = (index: number, code: ProblemCode, detail: string): string => {
  const p = problem(code, detail);
  return JSON.stringify({ index, status: p.status, problem: p } satisfies BatchLine);
};

/** The runner's route for one call (fastify's pattern; the fast path in internal-call-path.ts serves it too). */
export const INTERNAL_CALL_ROUTE = '/internal/v1/code-runs/:id/calls';
/** Most bytes of an internal call's body: arguments may be as large as the engine's output cap (64 MiB). */
export const INTERNAL_BODY_LIMIT_BYTES = 67_108_864 + 65_536;

/** The refusal of arguments nested deeper than `maxDepth`, or undefined. */
const tooDeepFor = (maxDepth: number) => (argsJson: string) =>
  jsonDepthExceeds(argsJson, maxDepth)
    ? `the call's arguments nest deeper than ${maxDepth} levels`
    : undefined;

/**
 * One call of run `id` from its parsed body: the answer's JSON text, or a thrown `HttpProblem`
 * (validation, json-too-deep, not-found) or the journal's error. Both ways in (fastify's route and
 * the fast path) run this, so they check and answer alike.
 */
export function singleCallServer(
  ctx: Pick<RouteContext, 'bindingCalls' | 'deps'>,
): (id: string, body: unknown, gone: AbortSignal | (() => AbortSignal)) => Promise<string> {
  const { bindingCalls } = ctx;
  const tooDeep = tooDeepFor(ctx.deps.config.ISLET_JSON_MAX_DEPTH);
  return async (id, body, gone) => {
    const { attempt, ...call } = readInternalCall(body);
    const deep = tooDeep(call.argsJson);
    if (deep) throw new HttpProblem('json-too-deep', deep);
    const served = await bindingCalls.serve(id, attempt, call, gone);
    if (!served) throw new HttpProblem('not-found', `no code run ${id}`);
    // The bytes fastify's serializer made of `{ outcome, deliverySeq }`, the outcome's text reused.
    return servedJson('{', served);
  };
}

export function internalRoutes(ctx: RouteContext): FastifyPluginAsync {
  const { auth, bindingCalls } = ctx;
  const options = { preHandler: auth.requireInternal, bodyLimit: INTERNAL_BODY_LIMIT_BYTES };
  const tooDeep = tooDeepFor(ctx.deps.config.ISLET_JSON_MAX_DEPTH);
  const serveCall = singleCallServer(ctx);
  return async (app) => {
    app.post(INTERNAL_CALL_ROUTE, options, async (request, reply) => {
      const text = await serveCall(idOf(request.params), request.body, clientGone(reply));
      reply.type('application/json; charset=utf-8');
      return text;
    });

    app.post('/internal/v1/code-runs/:id/call-batch', options, async (request, reply) => {
      const { id } = idParams.parse(request.params);
      const { attempt, calls } = readInternalBatch(request.body);
      const gone = clientGone(reply);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
      let pending: string[] = [];
      let flushing = false;
      // Calls whose line is not yet in `pending`: the flush that takes the last ones ends the answer.
      let left = calls.length;
      let ended: () => void = () => {};
      const answered = new Promise<void>((resolve) => {
        ended = resolve;
      });
      const flush = () => {
        flushing = false;
        const text = `${pending.join('\n')}\n`;
        pending = [];
        if (left > 0) {
          if (!res.destroyed) res.write(text);
          return;
        }
        // The last lines and the chunked answer's end in one `end`: one socket write (node corks
        // the chunk and the terminator), where a `write` then an `end` a check phase later were
        // two, and the runner often read (and woke for) each apart (round 48 `binding-path`).
        if (!res.destroyed) res.end(text);
        ended();
      };
      const write = (line: string) => {
        pending.push(line);
        left--;
        if (flushing) return;
        flushing = true;
        // Lines finished in the same turn go out in one write.
        setImmediate(flush);
      };
      const serveOne = async (call: BindingCall): Promise<string> => {
        const deep = tooDeep(call.argsJson);
        if (deep) return refused(call.index, 'json-too-deep', deep);
        try {
          const served = await bindingCalls.serve(id, attempt, call, gone);
          if (!served) return refused(call.index, 'not-found', `no code run ${id}`);
          return servedJson(`{"index":${call.index},"status":200,`, served);
        } catch (err) {
          const e = err as Error;
          // As a single call's 5xx: the runner tries the call again on another gateway (takeover).
          if (!isRedisTransient(e))
            request.log.error({ err: e, runId: id, index: call.index }, 'batch call failed');
          return refused(call.index, 'unavailable', 'the call could not be served; retry');
        }
      };
      // `then`, not an async arrow around an `await`: one promise and one microtask hop a call fewer.
      await Promise.all(calls.map((call) => serveOne(call).then(write)));
      await answered;
    });
  };
}
