/**
 * A run's end as the runner hands it to the store's `finish`, for this package's tests that end a
 * run and look at what the end left (its journal, decisions, fields) rather than at the end itself.
 */

/** A successful end: the program returned 1. */
export const completedEnd = {
  status: 'Completed' as const,
  result: { _tag: 'Completed' as const, value: 1, logs: [] },
  text: '1',
};
