/**
 * What the MCP surface needs from the process that mounts it (the gateway). Kept narrow so the
 * run submission behind it (the gateway's runs service, whose request shape is still moving) can
 * change without touching this package: the gateway writes the adapter.
 */
import type { CodeRunRecord, RunCodeRequest, RunStatus, SkillRequest, SkillResult } from '@islet/protocol';

export interface McpCaller {
  tenantId: string;
  /** The API key's id (who answered a decision) and scopes. */
  keyId?: string;
  /** Who the key belongs to; the MCP session's runs belong to this principal's Islet session. */
  principal?: string;
  scopes?: readonly string[];
}

/** Which contract's rules a run follows (document 000 or document 003). */
export type McpRunStyle = 'run_code' | 'code-mode';

interface McpRunInput {
  fields: RunCodeRequest;
  /** The MCP session: the run joins the Islet session of that id (workspace, run list). */
  sessionId: string;
  /** The JSON-RPC request id of the `tools/call`, so the run says which call made it. */
  callId: string;
  style: McpRunStyle;
}

interface McpPendingDecision {
  /** `<runId>:<index>` as `GET /v1/decisions` lists it. */
  id: string;
  /** The call index it stops at; -1 for a wider-access request. */
  index: number;
  /** One line for a person: which call with which arguments, or which wider access and why. */
  summary: string;
}

export interface McpRunState {
  id: string;
  status: RunStatus;
  /** False while the run still waits in its queue for a runner. */
  started: boolean;
  record: CodeRunRecord;
  decisions: McpPendingDecision[];
}

interface McpRuns {
  /** Throws the host's own problem for quota, rate and similar refusals. */
  submit(caller: McpCaller, input: McpRunInput): Promise<McpRunState>;
  /** Returns when the run ends, waits for a decision, `ms` pass or `signal` aborts. */
  wait(caller: McpCaller, runId: string, ms: number, signal: AbortSignal): Promise<McpRunState>;
  /** Cancels the run if it has not ended; a run that already ended is left as it is. */
  cancel(caller: McpCaller, runId: string): Promise<void>;
  /** The run as it is now (its owner only; throws the host's not-found otherwise). */
  get(caller: McpCaller, runId: string): Promise<McpRunState>;
  /** Answers a pending decision as `POST /v1/code-runs/{id}/decisions` does (needs scope `decisions`). */
  decide(caller: McpCaller, runId: string, index: number, allow: boolean): Promise<void>;
}

export interface McpHost {
  runs: McpRuns;
  /**
   * Validates run_code's arguments exactly as `POST /v1/runs` does (the contract's refusals, this
   * deployment's runtime switches, unknown fields): the same code path, not a copy.
   */
  parseRunCode(
    args: Record<string, unknown>,
  ): { ok: true; value: RunCodeRequest } | { ok: false; refusal: string };
  /** Code Mode is on in the platform settings and the caller's tenant has Apps. */
  codeModeAvailable(caller: McpCaller): Promise<boolean>;
  /**
   * What run_code's description tells an agent about the runtime: its rules and limits, and the
   * tenant's App names (bounded).
   */
  runtimeRules(caller: McpCaller): Promise<string>;
  /** TypeScript declarations of the caller's bindings (the gateway's `/v1/code-api`). */
  codeApi(
    caller: McpCaller,
    filter: { q?: string; connection?: string },
  ): Promise<{ declarations: string; bindings: Array<{ binding: string }> }>;
  /** Runs the skill through the cluster, in the session's workspace. */
  skill(caller: McpCaller, request: SkillRequest, sessionId: string): Promise<SkillResult>;
}
