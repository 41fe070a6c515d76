/**
 * The contract's vocabularies, in one place. run_code failure kinds come from the run_code
 * tool document; statuses and reasons from the Code Mode document. Tests quote these strings.
 */

/** What ended a run, as the run_code result text names it: `code run failed (<kind>): <message>`. */
export const FAILURE_KINDS = [
  'exception',
  'timeout',
  'abort',
  'worker-exit',
  'invalid-output',
  'output-limit',
  'protocol',
  'sandbox-unavailable',
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

/** A code run's status (Code Mode: "Read code runs"). */
export const RUN_STATUSES = ['Running', 'Waiting', 'Completed', 'Failed', 'Cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Why a code run failed (Code Mode: "Failure reasons"). */
export const FAILURE_REASONS = [
  'Error',
  'Timeout',
  'Memory',
  'OutputTooLarge',
  'ReplayMismatch',
  'Cancelled',
  'Unavailable',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Errors a binding call raises inside the program (Code Mode: App-call errors). */
export const APP_ERROR_NAMES = ['AppCallDenied', 'AppCallFailed', 'AppInputRequired'] as const;
export type AppErrorName = (typeof APP_ERROR_NAMES)[number];

/** How a binding call can stop a run without failing it (the engine's `stopped` outcome). */
export const STOP_CODES = ['suspended', 'replay-mismatch', 'cancelled'] as const;
export type StopCode = (typeof STOP_CODES)[number];

/** A printed log line's level: the program's `console` methods. */
export const LOG_LEVELS = ['log', 'info', 'warn', 'error', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** File-access modes, narrowest first. */
export const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** How the time budget treats waiting on binding calls and decisions. */
export const TIME_BUDGETS = ['elapsed', 'excluding-binding-waits'] as const;
export type TimeBudget = (typeof TIME_BUDGETS)[number];
