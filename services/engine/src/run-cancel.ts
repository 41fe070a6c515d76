/**
 * A run's cancel handed to the engine without an EventTarget (ExecuteOptions.cancel): the caller
 * aborts it, the engine's run listens while it can still be ended by it.
 * An `AbortSignal` listener added and removed every run is Node's EventTarget machinery (the
 * options' validation, a `Listener`, the signal's new-listener hooks): ~15 µs of the runner's CPU a
 * run at 16 clients (test/bench/README.md, round 39 `runner-cpu` and `abort-once`). Here the run's
 * listening is one field's store and its end another.
 */
export class RunCancel {
  private abortedWith: { reason: unknown } | undefined;
  private listener: (() => void) | undefined;

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  /** What `abort` was given (undefined before it); read as an AbortSignal's `reason` would be. */
  get reason(): unknown {
    return this.abortedWith?.reason;
  }

  /** Aborts once (later calls do nothing) and tells the run listening, if any, at once. */
  abort(reason?: unknown): void {
    if (this.abortedWith !== undefined) return;
    this.abortedWith = { reason };
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  /**
   * The engine's: `fn` is told of the abort (one listener: a handle belongs to one run at a time).
   * Not called when already aborted: the caller checks `aborted` first, as with a signal.
   */
  listen(fn: () => void): void {
    this.listener = fn;
  }

  /** The engine's: stops telling `fn` (if it is still the listener). */
  unlisten(fn: () => void): void {
    if (this.listener === fn) this.listener = undefined;
  }
}
