export { LuaScript } from '@islet/core/lua-script';
export { callEventData, jsonOrText, outcomeRecord } from './call-event.ts';
export { type CallJournalDeps, createCallJournal, JournalConflictError } from './call-journal.ts';
export {
  type CallOutcomeLabel,
  type CallProcessor,
  createCallProcessor,
  type ProcessCallInput,
  type ProcessedCall,
  UNKNOWN_OUTCOME_REASON,
} from './call-processor.ts';
export {
  type ClientCallMailbox,
  type ClientCallMailboxDeps,
  createClientCallMailbox,
  type Delivery,
} from './client-call-mailbox.ts';
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
export * from './health-buckets.ts';
export * from './health-store.ts';
export {
  createInFlightStore,
  type InFlightEntry,
  type InFlightStore,
  type RunHead,
} from './in-flight-store.ts';
export * from './jobs.ts';
export { journalKeys } from './keys.ts';
export { operationIdFor } from './operation-id.ts';
export {
  createPoolDemandStore,
  fairShareOn,
  noteQueued,
  noteUnqueued,
  type PoolDemandConfig,
  type PoolDemandStore,
} from './pool-demand.ts';
export {
  headOf,
  type JobView,
  type ReconcilePolicy,
  type RecoveryAction,
  type RunView,
  reconcileRun,
} from './reconcile-run.ts';
export {
  createReplayingHandler,
  type LiveOutcome,
  type ReplayingHandler,
  type ReplayingHandlerOptions,
} from './replaying-handler.ts';
export * from './run-index.ts';
export {
  cancelledEnd,
  createRunLifecycle,
  type FailedEnd,
  type FailureSpec,
  failedEnd,
  type RunLifecycle,
  type RunLifecycleDeps,
} from './run-lifecycle.ts';
export {
  createRunPolicyStore,
  type EffectiveRunPolicy,
  type RunPolicy,
  type RunPolicyStore,
  runPolicySchema,
} from './run-policy-store.ts';
export * from './run-store.ts';
export { type TextRef, textRefOf } from './stored-text.ts';
export { createTenantBytesStore, type TenantBytesStore } from './tenant-bytes-store.ts';
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
