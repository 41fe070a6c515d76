export { abortQuietly } from './abort-reason.ts';
export { createEngine } from './engine.ts';
/** Absolute path of the sandbox host script (for the kernel sandbox's read rules). */
export { HOST_SCRIPT } from './host-process.ts';
export {
  DEFAULT_MEMORY_MB,
  DEFAULT_OUTPUT_BYTES,
  DEFAULT_TIMEOUT_MS,
  deadlineMessage,
  effectiveTimeoutMs,
  MAX_TIMEOUT_MS,
  outputLimitMessage,
} from './limits.ts';
export { bindingNameProblem, validateBindingNames } from './names.ts';
export {
  completedText,
  NOT_JSON,
  PARTIAL_ENFORCEMENT_TEXT,
  parseValueJson,
  renderResultText,
  sandboxDeniedLine,
} from './result-text.ts';
export { RunCancel } from './run-cancel.ts';
export type * from './types.ts';
