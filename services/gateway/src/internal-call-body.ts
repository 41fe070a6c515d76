/**
 * The body of the runner's `POST /internal/v1/code-runs/:id/calls` (one binding call), checked.
 * The zod schema is the definition; `readInternalCall` checks the same rules by hand first (zod's
 * `safeParse` was ~16 µs of the gateway's ~0.5 ms a call, README round 35 `call-gw`) and asks zod
 * only for a body that fails them, so a refused body gets zod's own issues and problem text. The
 * test (internal-call-body.test.ts) holds the two to the same answer over every rule's edges.
 */
import { z } from 'zod';
import { validationProblem } from './problem-reply.ts';

/** Most characters of a call's arguments (JSON text), as the engine's output cap allows. */
export const MAX_ARGS_CHARS = 16 * 1024 * 1024;
/** Most characters of a binding's name. */
const MAX_BINDING_CHARS = 300;

/** One call as the runner sends it (single or in a batch). */
export const callSchema = z.object({
  index: z.number().int().min(0),
  binding: z.string().min(1).max(MAX_BINDING_CHARS),
  argsJson: z.string().max(MAX_ARGS_CHARS),
});

export const internalCallSchema = callSchema.extend({
  attempt: z.number().int().min(1),
  /** The runner lost the gateway that held this call and retries it here. */
  takeover: z.boolean().optional(),
});

export type InternalCall = z.infer<typeof internalCallSchema>;

/** Most calls in one batch (the runner sends at most 100; the engine's in-flight cap per run is 128 by default). */
export const MAX_BATCH_CALLS = 1000;

/** The body of the runner's `call-batch` (routes/internal.ts): an attempt and its calls. */
export const batchSchema = z.object({
  attempt: z.number().int().min(1),
  calls: z.array(callSchema).min(1).max(MAX_BATCH_CALLS),
});

export type InternalBatch = z.infer<typeof batchSchema>;

/** zod 4's `int()`: a safe integer (finite, whole, within ±2^53−1). */
const isInt = (v: unknown, min: number): v is number => Number.isSafeInteger(v) && (v as number) >= min;

/** `v` as one call of `callSchema` (its fields alone, in its order), or undefined when it breaks a rule. */
function callOf(v: unknown): InternalBatch['calls'][number] | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const { index, binding, argsJson } = v as Record<string, unknown>;
  return isInt(index, 0) &&
    typeof binding === 'string' &&
    binding.length >= 1 &&
    binding.length <= MAX_BINDING_CHARS &&
    typeof argsJson === 'string' &&
    argsJson.length <= MAX_ARGS_CHARS
    ? { index, binding, argsJson }
    : undefined;
}

/**
 * The batch in `body` as `batchSchema` gives it (unknown fields dropped, the schema's key order),
 * checked by hand as `readInternalCall` checks one call: zod's `safeParse` of a 100-call batch was
 * ~1 µs a call of the gateway's thread in a 100-call run's profile (13–19 µs a batch hot in a loop,
 * the hand check 1–4), at the batch's arrival, in front of every call's claim (round 40
 * `par-calls`). A body that breaks a rule throws zod's own validation problem.
 */
export function readInternalBatch(body: unknown): InternalBatch {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const { attempt, calls } = body as Record<string, unknown>;
    if (isInt(attempt, 1) && Array.isArray(calls) && calls.length >= 1 && calls.length <= MAX_BATCH_CALLS) {
      const read: InternalBatch['calls'] = new Array(calls.length);
      let ok = true;
      for (let i = 0; i < calls.length && ok; i++) {
        const call = callOf(calls[i]);
        if (call) read[i] = call;
        else ok = false;
      }
      if (ok) return { attempt, calls: read };
    }
  }
  const parsed = batchSchema.safeParse(body);
  if (!parsed.success) throw validationProblem(parsed.error);
  return parsed.data;
}

/**
 * The call in `body`, with only the schema's fields in the schema's order (as zod's output: unknown
 * fields dropped); a body that breaks a rule throws zod's validation problem.
 */
export function readInternalCall(body: unknown): InternalCall {
  // The call's own fields by the batch's check (callOf), then the single call's two more.
  const call = callOf(body);
  if (call) {
    const { attempt, takeover } = body as Record<string, unknown>;
    if (isInt(attempt, 1) && (takeover === undefined || typeof takeover === 'boolean')) {
      // `in`, not `!== undefined`: zod keeps a present key as it is.
      return 'takeover' in (body as object)
        ? { ...call, attempt, takeover: takeover as boolean | undefined }
        : { ...call, attempt };
    }
  }
  const parsed = internalCallSchema.safeParse(body);
  if (!parsed.success) throw validationProblem(parsed.error);
  // Unreachable for a JSON body (the hand check is zod's rules); zod's answer stands if it is not.
  return parsed.data;
}
