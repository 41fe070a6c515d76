export { type CallJournalDeps, createCallJournal, JournalConflictError } from './call-journal.ts';
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
export { idempotencyKeyFor, operationIdFor } from './operation-id.ts';
export type {
  CallJournal,
  CallSource,
  ClaimCall,
  ClaimResult,
  JournalEntry,
  JournalState,
  Sealer,
} from './types.ts';
