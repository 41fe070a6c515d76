/**
 * The run_code request and its refusals, exactly as the run_code tool contract writes them.
 *
 * `RunCodeRequestSchema` checks each field on its own (so services can `.extend()` it with their own
 * fields, e.g. a session id); `parseRunCodeRequest` adds what spans fields (escalation and
 * justification), what depends on the runtime (`… is not available for this PTC runtime`) and the
 * ceiling (a longer `timeoutMs` is capped, not refused). It returns the first refusal, in a fixed
 * order: code, description, timeoutMs, sandbox_permissions, escalation, justification.
 */
import { z } from 'zod';
import { SANDBOX_MODES } from './kinds.ts';
import { runCodeTimeoutMs } from './run-styles.ts';

export const RUN_CODE_REFUSALS = {
  code: 'invalid code: expected a non-empty string',
  description: 'invalid description: expected a non-empty string',
  timeoutMs: 'invalid timeoutMs: expected a positive finite number',
  sandboxPermissions: `invalid sandbox_permissions: expected one of ${SANDBOX_MODES.join(', ')}`,
  escalationWithoutJustification: 'invalid escalation: sandbox_permissions requires a justification',
  justificationWithoutEscalation:
    'invalid escalation: justification is only valid together with sandbox_permissions',
  justification: 'invalid justification: expected a non-empty sentence',
  timeoutMsUnavailable: 'timeoutMs is not available for this PTC runtime',
  sandboxPermissionsUnavailable: 'sandbox_permissions is not available for this PTC runtime',
} as const;

const nonEmpty = (s: string) => s.trim().length > 0;

export const RunCodeRequestSchema = z.object({
  code: z.string({ error: RUN_CODE_REFUSALS.code }).refine(nonEmpty, { error: RUN_CODE_REFUSALS.code }),
  description: z
    .string({ error: RUN_CODE_REFUSALS.description })
    .refine(nonEmpty, { error: RUN_CODE_REFUSALS.description }),
  timeoutMs: z
    .number({ error: RUN_CODE_REFUSALS.timeoutMs })
    .refine((n) => Number.isFinite(n) && n > 0, { error: RUN_CODE_REFUSALS.timeoutMs })
    .optional(),
  sandbox_permissions: z.enum(SANDBOX_MODES, { error: RUN_CODE_REFUSALS.sandboxPermissions }).optional(),
  justification: z
    .string({ error: RUN_CODE_REFUSALS.justification })
    .refine(nonEmpty, { error: RUN_CODE_REFUSALS.justification })
    .optional(),
});

export type RunCodeRequest = z.infer<typeof RunCodeRequestSchema>;

/** What this setup's program runtime can honour. */
export interface RunCodeCapabilities {
  /** The runtime honours a requested `timeoutMs`. Default true. */
  timeoutMs?: boolean;
  /** The runtime can run a program with wider file access. Default true. */
  sandboxPermissions?: boolean;
  /** A lower ceiling for this setup, ms (never above RUN_CODE_LIMITS.maxTimeoutMs). */
  maxTimeoutMs?: number;
}

type RunCodeParseResult<T> = { ok: true; value: T } | { ok: false; refusal: string };

/** The order in which refusals are reported when a request has several problems. */
const FIELD_ORDER = ['code', 'description', 'timeoutMs', 'sandbox_permissions', 'justification'];

function isPresent(input: unknown, key: string): boolean {
  return typeof input === 'object' && input !== null && (input as Record<string, unknown>)[key] !== undefined;
}

/**
 * Validates a run_code request. `schema` may be an `.extend()`ed RunCodeRequestSchema; its extra
 * fields' messages are reported after the contract's fields. A `timeoutMs` above the ceiling is capped.
 */
export function parseRunCodeRequest<S extends z.ZodType<RunCodeRequest> = typeof RunCodeRequestSchema>(
  input: unknown,
  capabilities: RunCodeCapabilities = {},
  schema?: S,
): RunCodeParseResult<z.infer<S>> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, refusal: RUN_CODE_REFUSALS.code };
  }
  // Controls the runtime cannot honour are refused before their values are looked at.
  if (isPresent(input, 'timeoutMs') && capabilities.timeoutMs === false) {
    return { ok: false, refusal: RUN_CODE_REFUSALS.timeoutMsUnavailable };
  }
  if (isPresent(input, 'sandbox_permissions') && capabilities.sandboxPermissions === false) {
    return { ok: false, refusal: RUN_CODE_REFUSALS.sandboxPermissionsUnavailable };
  }
  const plain = schema === undefined ? plainRequest(input as Record<string, unknown>) : undefined;
  const parsed = plain
    ? { success: true as const, data: plain }
    : (schema ?? RunCodeRequestSchema).safeParse(input);
  if (!parsed.success) {
    const issues = [...parsed.error.issues].sort((a, b) => rank(a.path) - rank(b.path));
    const first = issues[0]!;
    // The escalation rule comes before a malformed justification.
    if (String(first.path[0]) === 'justification' && !isPresent(input, 'sandbox_permissions')) {
      return { ok: false, refusal: RUN_CODE_REFUSALS.justificationWithoutEscalation };
    }
    return { ok: false, refusal: first.message };
  }
  const value = parsed.data as z.infer<S> & RunCodeRequest;
  if (value.sandbox_permissions !== undefined && value.justification === undefined) {
    return { ok: false, refusal: RUN_CODE_REFUSALS.escalationWithoutJustification };
  }
  if (value.justification !== undefined && value.sandbox_permissions === undefined) {
    return { ok: false, refusal: RUN_CODE_REFUSALS.justificationWithoutEscalation };
  }
  if (value.timeoutMs !== undefined) value.timeoutMs = requestTimeoutMs(value, capabilities);
  return { ok: true, value };
}

const isText = (v: unknown) => typeof v === 'string' && nonEmpty(v);
const RUN_CODE_CHECKS: readonly [keyof RunCodeRequest, (v: unknown) => boolean][] = [
  ['code', isText],
  ['description', isText],
  ['timeoutMs', (v) => v === undefined || (typeof v === 'number' && Number.isFinite(v) && v > 0)],
  ['sandbox_permissions', (v) => v === undefined || (SANDBOX_MODES as readonly unknown[]).includes(v)],
  ['justification', (v) => v === undefined || isText(v)],
];
// A field added to the schema but not to the checks would be dropped: then the schema parses all.
const RUN_CODE_CHECKED =
  RUN_CODE_CHECKS.map(([key]) => key).join() === Object.keys(RunCodeRequestSchema.shape).join();

/**
 * `RunCodeRequestSchema.safeParse(input)`'s value for a request each of whose fields passes, without
 * zod's parse (every submit pays it; test/bench/README.md, round 22), or undefined: then the schema
 * parses it, for its refusal. The same value: the schema's fields in its order, those the input has
 * as own properties (one present as undefined too, as zod keeps it), the values as given.
 */
function plainRequest(input: Record<string, unknown>): RunCodeRequest | undefined {
  if (!RUN_CODE_CHECKED) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, valid] of RUN_CODE_CHECKS) {
    const has = Object.hasOwn(input, key);
    const value = has ? input[key] : undefined;
    if (!valid(value)) return undefined;
    if (has) out[key] = value;
  }
  return out as RunCodeRequest;
}

function rank(path: readonly PropertyKey[]): number {
  const i = FIELD_ORDER.indexOf(String(path[0]));
  return i === -1 ? FIELD_ORDER.length : i;
}

/** The budget a validated request runs with: its (capped) `timeoutMs`, or the default. */
export function requestTimeoutMs(
  request: Pick<RunCodeRequest, 'timeoutMs'>,
  capabilities: RunCodeCapabilities = {},
) {
  return runCodeTimeoutMs(request.timeoutMs, capabilities.maxTimeoutMs);
}
