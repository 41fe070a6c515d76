/**
 * `POST /v1/runs`: a run_code request (the run_code document's fields and its exact refusal
 * strings) plus where the run belongs (session, turn, tool call) and the connections it may use.
 */
import { parseRunCodeRequest, type RunCodeRequest } from '@islet/protocol';
import { z } from 'zod';

export type RunCodeFields = RunCodeRequest;

/** The run_code refusals come from `@islet/protocol` (the contract's exact strings, in its order). */
export function parseRunCodeFields(
  body: Record<string, unknown>,
): { ok: true; value: RunCodeFields } | { ok: false; refusal: string } {
  const { code, description, timeoutMs, sandbox_permissions, justification } = body;
  const res = parseRunCodeRequest({ code, description, timeoutMs, sandbox_permissions, justification });
  return res.ok ? { ok: true, value: res.value } : res;
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
