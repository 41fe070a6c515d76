/**
 * `POST /v1/runs`: a run_code request (the run_code document's fields and its exact refusal
 * strings) plus the run's style, where it belongs (session, turn, tool call: optional, generated
 * when absent) and the connections it may use (absent: every App of the tenant, as `/v1/code-api`
 * declares them).
 */
import type { IsletConfig } from '@islet/core';
import {
  APPROVAL_MODES,
  parseRunCodeRequest,
  RUN_STYLES,
  type RunCodeCapabilities,
  type RunCodeRequest,
  RunCodeRequestSchema,
  requestTimeoutMs,
} from '@islet/protocol';
import { z } from 'zod';
import { isSessionId, sessionIdSchema } from './session-id.ts';

export type RunCodeFields = RunCodeRequest;

/** What this deployment's program runtime honours (config), as the run_code validator takes it. */
export function runtimeCapabilities(config: IsletConfig): RunCodeCapabilities {
  return {
    timeoutMs: config.ISLET_RUNTIME_TIMEOUT_MS === 'true',
    sandboxPermissions: config.ISLET_RUNTIME_SANDBOX_PERMISSIONS === 'true',
    maxTimeoutMs: config.ISLET_RUN_CODE_MAX_TIMEOUT_MS,
  };
}

/** The run_code refusals come from `@islet/protocol` (the contract's exact strings, in its order). */
export function parseRunCodeFields(
  body: Record<string, unknown>,
  capabilities: RunCodeCapabilities = {},
): { ok: true; value: RunCodeFields } | { ok: false; refusal: string } {
  const { code, description, timeoutMs, sandbox_permissions, justification } = body;
  const res = parseRunCodeRequest(
    { code, description, timeoutMs, sandbox_permissions, justification },
    capabilities,
  );
  return res.ok ? { ok: true, value: res.value } : res;
}

const id = z.string().min(1).max(200);
/** The fields Islet adds around the run_code request. */
export const runPlacementSchema = z.object({
  /** Which contract's rules the run follows. Default: the tenant's run policy (`run_code` unless set). */
  style: z.enum(RUN_STYLES).optional(),
  sessionId: sessionIdSchema.optional(),
  turnId: id.optional(),
  callId: id.optional(),
  /** Absent: every App (connection) of the tenant. */
  connections: z.array(id).max(100).optional(),
  /** How a call needing a decision waits: `stop` (replay after it) or `hold` (in place). Default: the style's. */
  approval: z.enum(APPROVAL_MODES).optional(),
});

/** Every field `POST /v1/runs` takes: the run_code request's and Islet's placement. */
export const RUN_FIELDS: readonly string[] = [
  ...Object.keys(RunCodeRequestSchema.shape),
  ...Object.keys(runPlacementSchema.shape),
];

/** Fields of the run_code skill (and others) an agent may send to /v1/runs by mistake. */
export const RUN_FIELD_HINTS: Readonly<Record<string, string>> = {
  language:
    'language is a field of the run_code skill (POST /v1/skills/run_code: python, javascript, bash); /v1/runs runs JavaScript and takes no language',
};

export type RunPlacement = z.infer<typeof runPlacementSchema>;

const isId = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 200;
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim().length > 0;
const PLACEMENT_CHECKS: ReadonlyArray<[keyof RunPlacement, (v: unknown) => boolean]> = [
  ['style', (v) => (RUN_STYLES as readonly unknown[]).includes(v)],
  ['sessionId', isSessionId],
  ['turnId', isId],
  ['callId', isId],
  ['connections', (v) => Array.isArray(v) && v.length <= 100 && v.every(isId)],
  ['approval', (v) => (APPROVAL_MODES as readonly unknown[]).includes(v)],
];

/**
 * A submit's body checked without zod when every field it has is plainly valid (what agents send:
 * a program, a description, ids, a list of connections, maybe a `timeoutMs`): the same values as
 * `parseRunCodeFields` and `runPlacementSchema.safeParse` give it, keys and their order included.
 * Anything else (an escalation, a field of another type, a value out of bounds) is `undefined`,
 * and the caller asks zod, so every refusal, its text and its order stay zod's and the contract's.
 * Why: zod's two parses were ~20–50 µs of a loaded gateway's CPU a submit, most of it its generic
 * machinery's code run cold between runs (test/bench/README.md, round 29 `gw-cpu`).
 * `run-request-plain.test.ts` holds it to zod's answers over every mix of valid and invalid fields.
 */
export function plainRunBody(
  body: Record<string, unknown>,
  capabilities: RunCodeCapabilities = {},
): { fields: RunCodeFields; placement: RunPlacement } | undefined {
  const { code, description, timeoutMs, sandbox_permissions, justification } = body;
  if (!nonEmpty(code) || !nonEmpty(description)) return undefined;
  if (sandbox_permissions !== undefined || justification !== undefined) return undefined;
  if (
    timeoutMs !== undefined &&
    (capabilities.timeoutMs === false ||
      typeof timeoutMs !== 'number' ||
      !Number.isFinite(timeoutMs) ||
      timeoutMs <= 0)
  )
    return undefined;
  // As zod's object gives them: its shape's keys in order, each key the input has (an undefined too).
  const fields: RunCodeFields = { code, description, timeoutMs, sandbox_permissions, justification };
  if (timeoutMs !== undefined) fields.timeoutMs = requestTimeoutMs(fields, capabilities);
  const placement: Record<string, unknown> = {};
  // Indexed, each pair read by index and the list copied by `slice`: a `for … of`, a pair's
  // destructuring and a spread each walk an iterator (a result an element) until the JIT optimizes
  // them, on every submit. (`slice` and a spread differ only on a sparse array, which a JSON body
  // never holds.)
  for (let i = 0; i < PLACEMENT_CHECKS.length; i++) {
    const check = PLACEMENT_CHECKS[i]!;
    const key = check[0];
    if (!(key in body)) continue;
    const v = body[key];
    if (v !== undefined && !check[1](v)) return undefined;
    placement[key] = Array.isArray(v) ? v.slice() : v;
  }
  return { fields, placement: placement as RunPlacement };
}
