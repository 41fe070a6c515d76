/**
 * `POST /v1/runs`: a run_code request (the run_code document's fields and its exact refusal
 * strings) plus the run's style, where it belongs (session, turn, tool call: optional, generated
 * when absent) and the connections it may use (absent: every App of the tenant, as `/v1/code-api`
 * declares them).
 */
import type { IsletConfig } from '@islet/core';
import { parseRunCodeRequest, type RunCodeCapabilities, type RunCodeRequest } from '@islet/protocol';
import { RUN_STYLES, type RunStyle } from '@islet/runs';
import { z } from 'zod';

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
  sessionId: id.optional(),
  turnId: id.optional(),
  callId: id.optional(),
  /** Absent: every App (connection) of the tenant. */
  connections: z.array(id).max(100).optional(),
  /** How a call needing a decision waits: `stop` (replay after it) or `hold` (in place). Default: the style's. */
  approval: z.enum(['hold', 'stop']).optional(),
});
export type RunPlacement = z.infer<typeof runPlacementSchema> & { style?: RunStyle };
