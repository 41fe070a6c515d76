/**
 * `POST /v1/runs`: a run_code request (the run_code document's fields and its exact refusal
 * strings) plus where the run belongs (session, turn, tool call) and the connections it may use.
 */
import { SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import { z } from 'zod';

export const RUN_CODE_MAX_TIMEOUT_MS = 600_000;

export interface RunCodeFields {
  code: string;
  description: string;
  timeoutMs?: number;
  sandbox_permissions?: SandboxMode;
  justification?: string;
}

/** Applies the run_code refusals in the document's order; returns the refusal text or the fields. */
export function parseRunCodeFields(
  body: Record<string, unknown>,
): { ok: true; value: RunCodeFields } | { ok: false; refusal: string } {
  const { code, description, timeoutMs, sandbox_permissions: perms, justification } = body;
  if (typeof code !== 'string' || code.length === 0)
    return { ok: false, refusal: 'invalid code: expected a non-empty string' };
  if (typeof description !== 'string' || description.trim().length === 0)
    return { ok: false, refusal: 'invalid description: expected a non-empty string' };
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
  )
    return { ok: false, refusal: 'invalid timeoutMs: expected a positive finite number' };
  if (perms !== undefined && justification === undefined)
    return { ok: false, refusal: 'invalid escalation: sandbox_permissions requires a justification' };
  if (perms === undefined && justification !== undefined)
    return {
      ok: false,
      refusal: 'invalid escalation: justification is only valid together with sandbox_permissions',
    };
  if (justification !== undefined && (typeof justification !== 'string' || justification.trim().length === 0))
    return { ok: false, refusal: 'invalid justification: expected a non-empty sentence' };
  if (perms !== undefined && !(SANDBOX_MODES as readonly unknown[]).includes(perms))
    return { ok: false, refusal: `invalid sandbox_permissions: expected one of ${SANDBOX_MODES.join(', ')}` };
  const value: RunCodeFields = { code, description };
  if (typeof timeoutMs === 'number') value.timeoutMs = Math.min(timeoutMs, RUN_CODE_MAX_TIMEOUT_MS);
  if (perms !== undefined) value.sandbox_permissions = perms as SandboxMode;
  if (typeof justification === 'string') value.justification = justification;
  return { ok: true, value };
}

const id = z.string().min(1).max(200);
/** The fields Islet adds around the run_code request. */
export const runPlacementSchema = z.object({
  sessionId: id,
  turnId: id,
  callId: id,
  connections: z.array(id).max(100).default([]),
  /** How a call needing a decision waits: `stop` (replay after it) or `hold` (in place). Default: tenant run policy. */
  approval: z.enum(['hold', 'stop']).optional(),
});
