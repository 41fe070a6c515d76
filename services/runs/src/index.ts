export { LuaScript } from '@islet/core/lua-script';
export { type CallJournalDeps, createCallJournal, JournalConflictError } from './call-journal.ts';
export {
  type CallOutcomeLabel,
  type CallProcessor,
  createCallProcessor,
  type ProcessCallInput,
  type ProcessedCall,
  UNKNOWN_OUTCOME_REASON,
} from './call-processor.ts';
export { type DecisionExpiryOptions, expiryMessage, startDecisionExpiry } from './decision-expiry.ts';
export {
  createDecisionStore,
  type DecisionStore,
  type DecisionStoreDeps,
  decisionView,
} from './decision-store.ts';
export {
  type AnswerResult,
  type ApprovalMode,
  type DecisionAnswer,
  type DecisionRecord,
  type DecisionRequest,
  type DecisionState,
  ESCALATION_INDEX,
  type NewDecision,
} from './decision-types.ts';
export * from './jobs.ts';
export { idempotencyKeyFor, operationIdFor } from './operation-id.ts';
export {
  RUN_STYLES,
  type RunStyle,
  resolveApproval,
  resolveTimeBudget,
} from './policy-defaults.ts';
export {
  createReplayingHandler,
  type LiveOutcome,
  type ReplayingHandler,
  type ReplayingHandlerOptions,
} from './replaying-handler.ts';
export * from './run-index.ts';
export {
  createRunPolicyStore,
  type EffectiveRunPolicy,
  type RunPolicy,
  type RunPolicyStore,
  runPolicySchema,
} from './run-policy-store.ts';
export * from './run-store.ts';
export type {
  BegunAttempt,
  CallJournal,
  CallSource,
  ClaimCall,
  ClaimResult,
  CompletionEvent,
  JournalCallView,
  JournalEntry,
  JournalState,
  Sealer,
} from './types.ts';
