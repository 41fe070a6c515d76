export { LuaScript } from '@islet/core/lua-script';
export { type AdmissionRide, admittedAddScript } from './admitted-add.ts';
export {
  type BakedCall,
  BakedScript,
  type DerivedEntry,
  type PartShape,
  type UnbakedReason,
} from './baked-call.ts';
export { BULL_QUIET_PRELUDE, quietAdd, quietComplete, quietCompleteAsk, quietFetch } from './bull-quiet.ts';
export { callEventData, jsonOrText, outcomeRecord } from './call-event.ts';
export { createCallJournal, JournalConflictError } from './call-journal.ts';
export { createCallProcessor, UNKNOWN_OUTCOME_REASON } from './call-processor.ts';
export { type ClientCallMailbox, createClientCallMailbox } from './client-call-mailbox.ts';
export { createDecisionStore, type DecisionStore, decisionView } from './decision-store.ts';
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
export { endDerived } from './end-derived.ts';
export {
  FETCHED_ARGS,
  type FetchedStart,
  type FetchedStartTerms,
  type FixedStart,
  fetchedStartArgs,
  startArgsList,
} from './fetched-start-args.ts';
export { ADD_STANDARD_JOB_SHA1, handedAdd } from './handed-add.ts';
export { handedComplete, MOVE_TO_FINISHED_SHA1 } from './handed-complete.ts';
export { handedFetch, knownFetchOptions, MOVE_TO_ACTIVE_SHA1 } from './handed-fetch.ts';
export { handedRefetch, knownFetchSource } from './handed-refetch.ts';
export { liveChannelOf } from './handoff-live.ts';
export { fetchAndLook, handOffAddScript, handOffKeys, type IdleTerms } from './handoff-scripts.ts';
export {
  bakeFixedTerms,
  compactTermsOf,
  FIXED_START,
  type FixedTerms,
  HAND_OFF_FETCH_KEYS,
  handOffFixedTerms,
  luaLiteral,
} from './handoff-terms.ts';
export * from './health-buckets.ts';
export * from './health-store.ts';
export {
  CLOSE_IDLE,
  FETCH_TAKE_BACK,
  REGISTER_IDLE,
  reclaimHandedScript,
  TAKE_BACK,
  TAKE_LEFT,
} from './idle-scripts.ts';
export { createInFlightStore, type InFlightStore, type RunHead } from './in-flight-store.ts';
export * from './jobs.ts';
export { journalKeys } from './keys.ts';
export {
  acquireCall,
  endAndCompleteBody,
  endAndCompleteScript,
  endCompleteStartBody,
  endCompleteStartScript,
  fetchLeaseBeginScript,
  type GivenUp,
  LEASE_ACQUIRE,
  LEASE_RELEASE,
  type LeaseAnswer,
  type LeaseTerms,
  leaseAnswerOf,
  promoteReserved,
  type RunLease,
  releaseCall,
} from './lease-scripts.ts';
export { idempotencyKeyFor, operationIdFor } from './operation-id.ts';
export { createPoolDemandStore, fairShareOn, noteQueued, type PoolDemandStore } from './pool-demand.ts';
export {
  expiryMessage,
  headOf,
  type JobView,
  type ReconcilePolicy,
  type RecoveryAction,
  type RunView,
  reconcileRun,
} from './reconcile-run.ts';
export { createReplayingHandler, type LiveOutcome } from './replaying-handler.ts';
export * from './run-index.ts';
export * from './run-index-writes.ts';
export { createRunLifecycle, failedEnd, type RunLifecycle } from './run-lifecycle.ts';
export {
  createRunPolicyStore,
  effectiveRunPolicy,
  type RunPolicy,
  type RunPolicyStore,
  runPolicySchema,
} from './run-policy-store.ts';
export { END_PUSH_FIELDS, type KnownRun } from './run-reads.ts';
export {
  type AppliedAction,
  createRunRecoveryLoop,
  expiredDecisionsFeed,
  type FailedJobSource,
  failedJobsFeed,
  inFlightFeed,
  pausedRunsFeed,
  type RecoveryCapabilities,
  type RecoveryFeed,
  type RecoveryItem,
  type RecoveryReads,
  type RunRecoveryLoop,
  type RunRecoveryLoopOptions,
} from './run-recovery-loop.ts';
export * from './run-store.ts';
export { FINISH_RUN_RELEASE } from './run-store-scripts.ts';
export { timingsFrom, timingsText } from './run-timings.ts';
export { openedResultJson, RESULT_JSON_KEEP_MIN_CHARS } from './sealed-fields.ts';
export { type TextRef, textRefOf } from './stored-text.ts';
export {
  createStreamListenersStore,
  STREAM_LISTENER_REFRESH_MS,
  type StreamListenersStore,
} from './stream-listeners-store.ts';
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
