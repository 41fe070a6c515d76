/**
 * A turn of the program on the sandbox host's own thread (the first turn, and a delivery's turn
 * with `turnMs`): the isolate runs here, called from here, and no frame is read meanwhile, so the
 * turn's deadline is kept from another thread — the host's turn watchdog (turn-watchdog.ts), or,
 * for an isolate it does not watch (tests, a prepare that failed to adopt), isolated-vm's own
 * `timeout` option as before.
 */
import type { TurnWatchdog } from './turn-watchdog.ts';

/** The host's watchdog and the number it gave the isolate (`TurnWatchdog.adopt`). */
export interface TurnWatch {
  readonly watchdog: TurnWatchdog;
  readonly gen: number;
}

/** What `enter` passes to `applySync`: isolated-vm's timeout only when no watchdog keeps it. */
export type TurnOptions = { timeout?: number };

/**
 * A turn on this thread that ends the run disposes its isolate from a callback (`finish`), so
 * isolated-vm ends `applySync` with a new Error ("Isolate was disposed during execution") in this
 * process, which it builds with this thread's stack: V8 captured and formatted ~10 frames for it on
 * every run (Node's prepareStackTrace, call sites' positions and names; ~2 % of a host's main
 * thread by `perf`), to be thrown away (only its message is read). Frames are not captured in those
 * turns (an internal error in a callback of one is logged with its message only); the limit is
 * put back as the turn returns. Returns the limit to put back.
 */
function quietStacks(): number {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  return limit;
}

export class HostTurn {
  /** Inside a turn on this thread: the isolate runs here, called from here. */
  active = false;
  /** The watchdog stopped a turn of this run at its deadline (the isolate is disposed). */
  overran = false;
  private readonly watch: TurnWatch | undefined;

  constructor(watch: TurnWatch | undefined) {
    this.watch = watch;
  }

  /**
   * Runs `enter` (an `applySync` into the isolate with the options given) as a turn on this
   * thread, stopped `turnMs` from now (none: no deadline). `failed` is called inside the turn
   * (`active` still true) with what `applySync` threw, `overran` true when the deadline ended it.
   */
  run(
    turnMs: number | undefined,
    enter: (options: TurnOptions) => void,
    failed: (error: unknown, overran: boolean) => void,
  ): void {
    this.active = true;
    const stackLimit = quietStacks();
    try {
      const watch = this.watch;
      const watched = turnMs !== undefined && (watch?.watchdog.begin(watch.gen, turnMs) ?? false);
      let error: unknown;
      let threw = false;
      try {
        enter(turnMs === undefined || watched ? {} : { timeout: Math.max(1, turnMs) });
      } catch (e) {
        threw = true;
        error = e;
      }
      // Taken by the watchdog (even as the turn returned): past its deadline, as isolated-vm's
      // timeout would have found it; the isolate is disposed by now.
      if (watched && watch?.watchdog.end()) {
        this.overran = true;
        failed(error ?? new Error('turn deadline reached'), true);
      } else if (threw) failed(error, false);
    } finally {
      Error.stackTraceLimit = stackLimit;
      this.active = false;
    }
  }

  /** The isolate's CPU time when the watchdog stopped it, ns (undefined: not stopped by it). */
  stoppedCpuNs(): bigint | undefined {
    return this.overran ? this.watch?.watchdog.stoppedCpuNs() : undefined;
  }
}
