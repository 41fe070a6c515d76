/**
 * A run's failure records, built in one place: every run that ends without its program's own
 * outcome (cancelled, expired decision, Code Mode off, a runner giving up) ends with this shape,
 * and its result text names the failure kind the way the engine's does.
 */
import type { FailureKind, FailureReason, RunResult } from '@islet/protocol';

export interface FailedEnd {
  status: 'Failed' | 'Cancelled';
  result: RunResult;
  text: string;
  kind: FailureKind;
}

export interface FailureSpec {
  status: 'Failed' | 'Cancelled';
  reason: FailureReason;
  kind: FailureKind;
  message: string;
  /** The result names its kind (default); a run refused before it ran names only its reason. */
  kindInResult?: boolean;
}

/** The end of a run that failed or was cancelled before or outside its program. */
export function failedEnd(spec: FailureSpec): FailedEnd {
  const { status, reason, kind, message } = spec;
  const result: RunResult =
    spec.kindInResult === false
      ? { _tag: 'Failed', reason, message, logs: [] }
      : { _tag: 'Failed', reason, kind, message, logs: [] };
  return { status, result, text: `code run failed (${kind}): ${message}`, kind };
}

/** A run stopped from outside (a cancel, an expired decision): reason Cancelled, kind abort. */
export function cancelledEnd(status: 'Failed' | 'Cancelled', message: string): FailedEnd {
  return failedEnd({ status, reason: 'Cancelled', kind: 'abort', message });
}
