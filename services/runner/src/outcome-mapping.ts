/**
 * From the engine's RunOutcome to the run's final status, Code Mode result and reason. Failure
 * records come from `@islet/runs`' one builder (`failedEnd`), with the program's output and the
 * engine's result text.
 */
import type { RunOutcome } from '@islet/engine';
import { completedText, NOT_JSON, parseValueJson, renderResultText } from '@islet/engine';
import { type FailureKind, type RunResult, reasonForFailure, statusForFailure } from '@islet/protocol';
import { failedEnd } from '@islet/runs';

type RunEnd =
  | {
      kind: 'final';
      status: 'Completed' | 'Failed' | 'Cancelled';
      result: RunResult;
      text: string;
      failureKind: FailureKind | 'none';
      /**
       * A Completed run's `text` is its result's own, as a reader renders it from the result
       * (runs' sealed-fields.ts `completedText`): the store leaves it out without rendering it again.
       */
      textIsResult?: boolean;
    }
  /** The run waits for a decision: not final, the job completes and the run is replayed later. */
  | { kind: 'suspended' }
  /** The engine stopped on `cancelled` (cancel request, or a newer execution took the run over). */
  | { kind: 'cancelled'; result: RunResult; text: string };

export function mapOutcome(outcome: RunOutcome): RunEnd {
  const logs = outcome.logs.map((l) => ({ level: l.level, text: l.text }));
  if (outcome.status === 'completed') {
    const result: RunResult = { _tag: 'Completed', logs };
    // The engine's text is the printed lines, then the value: a string as itself, anything else
    // as the program's JSON, where a reader of the result writes JSON.stringify's. The same text
    // unless that JSON is not JSON.stringify's own (the host's encoder is not Node's): then the
    // store keeps the text. Decided here, where the value is parsed, not by a second rendering.
    // The value is parsed once, for the result and the engine's text alike (`completedText`, the
    // bytes `renderResultText` gives); a text that is not JSON is kept as the value, a string.
    let textIsResult = true;
    let parsed: unknown;
    if (outcome.valueJson !== undefined) {
      parsed = parseValueJson(outcome.valueJson);
      const value = parsed === NOT_JSON ? outcome.valueJson : parsed;
      result.value = value;
      if (typeof value !== 'string') textIsResult = JSON.stringify(value) === outcome.valueJson;
    }
    const text = completedText(outcome, parsed);
    return { kind: 'final', status: 'Completed', result, text, failureKind: 'none', textIsResult };
  }
  const text = renderResultText(outcome);
  if (outcome.status === 'stopped') {
    const code = outcome.stop?.code;
    const message = outcome.stop?.message ?? 'the run was stopped';
    if (code === 'suspended') return { kind: 'suspended' };
    if (code === 'replay-mismatch') {
      // Code Mode (the only style that replays) names this failure ReplayMismatch: "OpenBot stops
      // it with ReplayMismatch". The text says so rather than passing for a stopped run's abort.
      const end = failedEnd({
        status: 'Failed',
        reason: 'ReplayMismatch',
        kind: 'abort',
        kindInResult: false,
        message,
        logs,
        text: renderResultText(outcome, 'ReplayMismatch'),
      });
      return { kind: 'final', status: 'Failed', result: end.result, text: end.text, failureKind: end.kind };
    }
    const end = failedEnd({ status: 'Cancelled', reason: 'Cancelled', kind: 'abort', message, logs, text });
    return { kind: 'cancelled', result: end.result, text: end.text };
  }
  const failure = outcome.failure;
  const kind = failure?.kind ?? 'exception';
  const end = failedEnd({
    status: statusForFailure(kind),
    reason: reasonForFailure(kind, failure?.cause),
    kind,
    message: failure?.message ?? '',
    logs,
    ...(failure?.detail ? { detail: failure.detail } : {}),
    ...(failure?.line !== undefined ? { line: failure.line } : {}),
    ...(failure?.column !== undefined ? { column: failure.column } : {}),
    ...(failure?.stack ? { stack: failure.stack } : {}),
    text,
  });
  return { kind: 'final', status: end.status, result: end.result, text: end.text, failureKind: end.kind };
}
