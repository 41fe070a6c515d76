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

export type RunPlacement = z.infer<typeof runPlacementSchema>;

const isId = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 200;
const PLACEMENT_CHECKS: readonly [keyof RunPlacement, (v: unknown) => boolean][] = [
  ['style', (v) => (RUN_STYLES as readonly unknown[]).includes(v)],
  ['sessionId', (v) => typeof v === 'string' && isSessionId(v)],
  ['turnId', isId],
  ['callId', isId],
  ['connections', (v) => Array.isArray(v) && v.length <= 100 && v.every(isId)],
  ['approval', (v) => (APPROVAL_MODES as readonly unknown[]).includes(v)],
];

// A field added to the schema but not to the checks would be dropped: then the schema parses all.
const PLACEMENT_CHECKED =
  PLACEMENT_CHECKS.map(([key]) => key).join() === Object.keys(runPlacementSchema.shape).join();

/**
 * `runPlacementSchema.safeParse(body)` for a body whose placement fields are all absent or valid,
 * without zod's parse (every submit pays it: ~10 % of the route's own JavaScript, test/bench/README.md
 * round 22); undefined for anything else, which the caller then parses with the schema for its
 * exact issues. The same value the schema gives: the fields in the schema's order, only those the
 * body has, the connections a copy. (The order matters: an Idempotency-Key's hash is of it.)
 */
export function placementOf(body: Record<string, unknown>): RunPlacement | undefined {
  if (!PLACEMENT_CHECKED) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, valid] of PLACEMENT_CHECKS) {
    if (!Object.hasOwn(body, key)) continue;
    const value = body[key];
    if (value === undefined || !valid(value)) return undefined;
    out[key] = Array.isArray(value) ? [...value] : value;
  }
  return out as RunPlacement;
}

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
