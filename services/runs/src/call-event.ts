/**
 * A binding call's `call` event on its run's stream (the console's call list, SSE readers), the
 * same for App calls (served by the gateway) and files calls (served by the runner). It goes in
 * with the call's outcome, in the journal's `complete` step (RunStore.callEvent). Two stored forms,
 * both read (run-reads.ts `readEvents`): this data sealed in the event's `data` field, or (core
 * config `ISLET_CALL_ONE_SEAL`, on by default since round 45) the call's index `i` and `ms` alone, the rest read
 * from the run's journal (call-event-reads.ts), where the outcome and arguments are sealed already.
 */
import type { BindingOutcome, CallOutcomeRecord } from '@islet/protocol';
import type { CallSource } from './types.ts';

/** A call's outcome as records and events show it. */
export function outcomeRecord(outcome: BindingOutcome): CallOutcomeRecord {
  switch (outcome.type) {
    case 'result':
      return { _tag: 'Done', result: { _tag: 'Completed', value: jsonOrText(outcome.valueJson) } };
    case 'error': {
      const error: { name: typeof outcome.name; message: string; details?: Record<string, unknown> } = {
        name: outcome.name,
        message: outcome.message,
      };
      if (outcome.details) error.details = outcome.details;
      return { _tag: 'Done', result: { _tag: 'Failed', error } };
    }
    case 'stop':
      return outcome.code === 'suspended'
        ? { _tag: 'Waiting' }
        : { _tag: 'Done', result: { _tag: 'Stopped', code: outcome.code, message: outcome.message } };
  }
}

/** Parsed JSON, or the text itself when it is not JSON. */
export function jsonOrText(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}

/** Whole milliseconds since `startedNs` (`process.hrtime.bigint()`): a `call` event's `durationMs`. */
export function durationMsSince(startedNs: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - startedNs) / 1e6);
}

/** The `call` event's data: the call, its source, its outcome, its arguments and how long it took. */
export function callEventData(
  call: { index: number; binding: string; argsJson: string },
  source: CallSource | undefined,
  outcome: BindingOutcome,
  startedNs: bigint,
  /** The arguments as `jsonOrText(call.argsJson)` gives them, when the caller has them already. */
  args: unknown = jsonOrText(call.argsJson),
): Record<string, unknown> {
  return callEventOf(call.index, call.binding, source, outcome, args, durationMsSince(startedNs));
}

/**
 * The `call` event's data from its parts, in the order every reader has seen its fields (the
 * sealed form's writer above, and the reader of the one-seal form, call-event-reads.ts).
 */
export function callEventOf(
  index: number,
  binding: string,
  source: CallSource | undefined,
  outcome: BindingOutcome,
  args: unknown,
  durationMs: number,
): Record<string, unknown> {
  return {
    index,
    binding,
    ...(source ? { source } : {}),
    outcome: outcomeRecord(outcome),
    // For the console's call list (the record has neither); sealed like every event.
    arguments: args,
    durationMs,
  };
}
