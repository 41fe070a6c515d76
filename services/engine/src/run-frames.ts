/**
 * The frames a Run (run.ts) sends its host and its checks of the `call` and `done` frames it reads:
 * pure, so run.ts keeps only the state machine's transitions.
 */
import { isLosslessJson } from './binding-outcome.ts';
import { deadlineMessage } from './limits.ts';
import type { RunParams } from './run-params.ts';
import type { BindingOutcome, RunFailure } from './types.ts';
import type { FromHost, HostDone, ToHost } from './wire.ts';

/** The `run` frame that starts the program. */
export function runFrame(p: RunParams, remainingMs: () => number): ToHost {
  return {
    t: 'run',
    code: p.code,
    config: p.config,
    memoryMb: p.memoryMb,
    outputBytes: p.outputBytes,
    outputCap: p.outputCap,
    // What is left of the budget (a replay's first turn must not outlive the run's deadline).
    ...(p.timeoutMs === null
      ? {}
      : { budgetMs: Math.max(1, Math.ceil(Math.min(p.timeoutMs, remainingMs()))) }),
  };
}

/**
 * The frame that hands a call's outcome (a result or an error, not a stop) to the program, as its
 * JSON text: the same bytes as `JSON.stringify` of `{ t, id, valueJson, turnMs }` (or the error's
 * `{ t, id, name, message, detailsJson, turnMs }`), made with no frame object to stringify: only
 * the strings are escaped, each by `JSON.stringify` of the string itself (a lone call's outcome is
 * on the call's path; test/bench/README.md, round 51 `binding-passthrough`). `turnMs` (an integer
 * ≥ 1, or undefined: no `turnMs`) is run.ts's.
 */
export function outcomeFrame(
  id: number,
  outcome: Exclude<BindingOutcome, { type: 'stop' }>,
  turnMs: number | undefined,
): string {
  const turn = turnMs === undefined ? '}' : `,"turnMs":${turnMs}}`;
  if (outcome.type === 'result')
    return `{"t":"result","id":${id},"valueJson":${JSON.stringify(outcome.valueJson)}${turn}`;
  const details = JSON.stringify(JSON.stringify(outcome.details ?? {}));
  return `{"t":"error","id":${id},"name":${JSON.stringify(outcome.name)},"message":${JSON.stringify(outcome.message)},"detailsJson":${details}${turn}`;
}

/** Why a `call` frame is refused (the run ends as `protocol`), or undefined when it is the next call. */
export function callRefusal(
  m: Extract<FromHost, { t: 'call' }>,
  nextId: number,
  bindings: readonly string[],
): string | undefined {
  if (m.id !== nextId) return 'the sandbox host sent a call out of order';
  if (!bindings.includes(m.binding) || !isLosslessJson(m.argsJson))
    return 'the sandbox host sent a call the program was not given';
  return undefined;
}

/** A `done` frame checked: the protocol failure it is, or the end the run takes from it. */
export function checkedDone(
  reported: HostDone,
  timeoutMs: number | null,
): { failure: RunFailure; done?: undefined } | { done: HostDone; failure?: undefined } {
  if (
    reported.status === 'completed' &&
    reported.valueJson !== undefined &&
    !isLosslessJson(reported.valueJson)
  )
    return { failure: { kind: 'protocol', message: 'the sandbox host sent a value that is not JSON' } };
  // The host names the budget it was given, which for a replay is only what was left of it.
  return {
    done:
      reported.status === 'failed' && reported.kind === 'timeout' && timeoutMs !== null
        ? { ...reported, message: deadlineMessage(timeoutMs) }
        : reported,
  };
}
