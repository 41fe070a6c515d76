import type { ApprovalMode, SandboxMode } from '@islet/protocol';

export type { ApprovalMode };

/** `code.index` of a run's wider-access request (`sandbox_permissions`): it precedes every call. */
export const ESCALATION_INDEX = -1;

/**
 * A pending decision in the Code Mode document's shape ("When a call needs a decision"), plus
 * what a decider needs around it. For a wider-access request `capability.action` is
 * `sandbox.escalate`, `capability.target` the requested mode, `code.index` is -1 and
 * `justification` is the run's one-sentence reason.
 */
export interface DecisionRequest {
  capability: { action: 'apps.call' | 'sandbox.escalate'; target: string };
  toolCallId: string;
  app?: { id: string; callId: string; arguments: unknown };
  code: { run: string; index: number; code: string };
  justification?: string;
  /** `hold`: the program waits in place; `stop`: the run stopped and will be replayed. */
  approval: ApprovalMode;
  requestedAt: number;
  expiresAt: number;
}

export type DecisionState = 'pending' | 'allowed' | 'denied' | 'expired';

export interface DecisionAnswer {
  allow: boolean;
  /** For a call whose App needs more input: handed to the App with the call (AppInputRequired). */
  input?: unknown;
  /** Who decided (API key id or user), kept for the audit trail. */
  by: string;
  /** A denial's reason, in the error the program receives. */
  reason?: string;
}

export interface DecisionRecord {
  tenant: string;
  mode: SandboxMode;
  runId: string;
  index: number;
  state: DecisionState;
  request: DecisionRequest;
  answer?: DecisionAnswer & { at: number };
}

export interface NewDecision {
  tenant: string;
  /** The sandbox mode whose pool runs the run (the paused-runs set it is counted in). */
  mode: SandboxMode;
  runId: string;
  index: number;
  toolCallId: string;
  code: string;
  approval: ApprovalMode;
  /** An App call: `connectionId`/`tool` make `capability.target`; `appId` the App's id. */
  call?: { connectionId: string; tool: string; appId?: string; arguments: unknown };
  /** A wider-access request. */
  escalation?: { mode: SandboxMode; justification: string };
}

export type AnswerResult =
  | { ok: true; decision: DecisionRecord; stillPending: number }
  | { ok: false; error: 'not-found' | 'conflict'; state?: DecisionState };
