/**
 * The reason a run's end-of-calls aborts give (the engine's "run ended" signal, the runner's "calls
 * over"): the `AbortError` a plain `abort()` gives (name, message, code), made once and frozen.
 * A plain `abort()` builds a `DOMException` and captures its stack, twice a run that made a binding
 * call: ~140 µs a 100-call run in the runner's profile, ~50 µs still when made without the stack
 * (test/bench/README.md, round 30 `runner-cpu`). Made with no stack frames (a module load's would
 * mislead) and frozen, so no listener can attach anything one run's listener would see in another.
 */
const RUN_OVER: DOMException = (() => {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return Object.freeze(new DOMException('This operation was aborted', 'AbortError'));
  } finally {
    Error.stackTraceLimit = limit;
  }
})();

/** Aborts `controller` (unless it was) with the shared, frozen `AbortError`. */
export function abortQuietly(controller: AbortController): void {
  if (!controller.signal.aborted) controller.abort(RUN_OVER);
}
