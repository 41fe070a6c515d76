export { type CallJournalDeps, createCallJournal, JournalConflictError } from './call-journal.ts';
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
