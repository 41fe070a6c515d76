/**
 * The call journal's conflict: a token-checked `markSent` found the call taken over. Moved out of
 * call-journal.ts (a pure move; one class per file), which re-exports it for its callers.
 */

/** A token-checked `markSent` found the call taken over by another handler: do not send. */
export class JournalConflictError extends Error {
  readonly code = 'journal-conflict';
  constructor(message: string) {
    super(message);
    this.name = 'JournalConflictError';
  }
}
