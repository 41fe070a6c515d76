/**
 * Aborting a controller without a reason makes Node build a `DOMException` and capture its stack
 * (tens of µs on a loaded runner, twice a run that makes binding calls: the engine's "run ended"
 * signal and the executor's "calls over"; test/bench/README.md, round 30 `runner-cpu`). The same
 * `AbortError` made with no stack frames is what a listener reads there (name, message, code); only
 * `stack` has no frames, and no listener reads it.
 */
export function abortQuietly(controller: AbortController): void {
  if (controller.signal.aborted) return;
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let reason: DOMException;
  try {
    reason = new DOMException('This operation was aborted', 'AbortError');
  } finally {
    Error.stackTraceLimit = limit;
  }
  controller.abort(reason);
}
