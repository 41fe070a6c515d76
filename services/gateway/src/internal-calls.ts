/**
 * The runner → gateway channel's two routes, as one module both of their transports call: fastify's
 * routes (`routes/internal.ts`: every `inject()`, and every request the fast path hands on) and the
 * fast path on the same listener (`internal-fast-path.ts`: the runner's own requests). What a call
 * is checked for, how it is served and what it is answered live here once, so the two cannot drift.
 * - `POST /internal/v1/code-runs/:id/calls`: one call per request.
 * - `POST /internal/v1/code-runs/:id/call-batch`: the calls a program made together (a
 *   `Promise.all`), one request; the answer is NDJSON, one line per call as soon as it is
 *   journaled (the program's `Promise.race` still sees the first), lines finished together written
 *   together. One request instead of a hundred: the per-request work (routing, auth, headers, a
 *   socket write each way) was most of a parallel call's gateway CPU.
 */
import type { BindingCall } from '@islet/engine';
import { type Problem, type ProblemCode, problem } from '@islet/protocol';
import { z } from 'zod';
import type { BindingCalls, ServedCall } from './binding-calls.ts';
import { jsonDepthExceeds } from './json-depth.ts';
import { HttpProblem, isRedisTransient, validationProblem } from './problem-reply.ts';

export const CALLS_ROUTE = '/internal/v1/code-runs/:id/calls';
export const BATCH_ROUTE = '/internal/v1/code-runs/:id/call-batch';

/** A call's body: arguments may be as large as the engine's output cap (64 MiB). */
export const INTERNAL_BODY_LIMIT = 67_108_864 + 65_536;

/** Most calls in one batch (the runner sends at most 100; the engine's in-flight cap per run is 128 by default). */
const MAX_BATCH_CALLS = 1000;

const MAX_ARGS_CHARS = 16 * 1024 * 1024;

/** One call as the runner sends it (single or in a batch). */
const callSchema = z.object({
  index: z.number().int().min(0),
  binding: z.string().min(1).max(300),
  argsJson: z.string().max(MAX_ARGS_CHARS),
});

const batchSchema = z.object({
  attempt: z.number().int().min(1),
  calls: z.array(callSchema).min(1).max(MAX_BATCH_CALLS),
});

const internalCallSchema = callSchema.extend({
  attempt: z.number().int().min(1),
  /** The runner lost the gateway that held this call and retries it here. */
  takeover: z.boolean().optional(),
});

/** One line of a batch's answer: the call's served body, or its problem with the status a single call would get. */
type BatchLine =
  | ({ index: number; status: 200 } & ServedCall)
  | { index: number; status: number; problem: Problem };

const refused = (index: number, code: ProblemCode, detail: string): BatchLine => {
  const p = problem(code, detail);
  return { index, status: p.status, problem: p };
};

/** The head of a batch's 200 answer (its lines follow as the calls are journaled). */
export const BATCH_HEADERS = { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' } as const;

/** Where a batch's lines go: the response, already 200 with `BATCH_HEADERS`. */
export interface LineSink {
  readonly destroyed: boolean;
  write(text: string): unknown;
  end(): unknown;
}

interface ErrorLog {
  error(obj: object, msg: string): void;
}

export function createInternalCalls(bindingCalls: BindingCalls, maxDepth: number) {
  /** The refusal of arguments nested deeper than ISLET_JSON_MAX_DEPTH, or undefined. */
  const tooDeep = (argsJson: string) =>
    jsonDepthExceeds(argsJson, maxDepth)
      ? `the call's arguments nest deeper than ${maxDepth} levels`
      : undefined;

  /** One call's body checked and served: its answer, or a thrown `HttpProblem` (or the serve's own error). */
  async function one(id: string, body: unknown, signal: AbortSignal): Promise<ServedCall> {
    const parsed = internalCallSchema.safeParse(body);
    if (!parsed.success) throw validationProblem(parsed.error);
    const { attempt, ...call } = parsed.data;
    const deep = tooDeep(call.argsJson);
    if (deep) throw new HttpProblem('json-too-deep', deep);
    const served = await bindingCalls.serve(id, attempt, call, signal);
    if (!served) throw new HttpProblem('not-found', `no code run ${id}`);
    return served;
  }

  /** A batch's body checked (a thrown `HttpProblem` before anything is answered). */
  function batch(body: unknown): { attempt: number; calls: BindingCall[] } {
    const parsed = batchSchema.safeParse(body);
    if (!parsed.success) throw validationProblem(parsed.error);
    return parsed.data;
  }

  /** A checked batch served into `out`, a line a call; resolves once `out` is ended. */
  async function stream(
    id: string,
    attempt: number,
    calls: BindingCall[],
    signal: AbortSignal,
    out: LineSink,
    log: ErrorLog,
  ): Promise<void> {
    let pending: string[] = [];
    let flushing = false;
    const write = (line: BatchLine) => {
      pending.push(JSON.stringify(line));
      if (flushing) return;
      flushing = true;
      // Lines finished in the same turn go out in one write.
      setImmediate(() => {
        flushing = false;
        const text = `${pending.join('\n')}\n`;
        pending = [];
        if (!out.destroyed) out.write(text);
      });
    };
    const serveOne = async (call: BindingCall): Promise<BatchLine> => {
      const deep = tooDeep(call.argsJson);
      if (deep) return refused(call.index, 'json-too-deep', deep);
      try {
        const served = await bindingCalls.serve(id, attempt, call, signal);
        if (!served) return refused(call.index, 'not-found', `no code run ${id}`);
        return { index: call.index, status: 200, ...served };
      } catch (err) {
        const e = err as Error;
        // As a single call's 5xx: the runner tries the call again on another gateway (takeover).
        if (!isRedisTransient(e)) log.error({ err: e, runId: id, index: call.index }, 'batch call failed');
        return refused(call.index, 'unavailable', 'the call could not be served; retry');
      }
    };
    await Promise.all(calls.map(async (call) => write(await serveOne(call))));
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!out.destroyed) out.end();
  }

  return { one, batch, stream };
}

export type InternalCalls = ReturnType<typeof createInternalCalls>;
