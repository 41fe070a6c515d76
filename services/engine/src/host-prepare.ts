/**
 * When the sandbox host makes the isolate for its next run (host.ts). Making one (a new isolate,
 * its context, the harness from its code cache) costs the host's thread about as much CPU as the
 * last one's teardown. Made right after a run's `done`, both landed on the end's path: the runner's
 * end script call, Redis's script and fsync, the gateway's answer, all woken on a 2-core box while
 * the host held one core (round 27's one-client trace: the gateway waited 2.35 ms for the CPU the
 * host had; round 28's `host-after` section in test/bench/README.md). So after a run the next
 * isolate is made `afterRunMs` later, when that path is normally through, or when a run needs it,
 * whichever comes first; never twice. A busy host (16 clients) is handed its next run before the
 * delay passes and makes the isolate on that run's path, as it would have right after `done`
 * anyway: the same work, no extra wait.
 */
export interface PrepareTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setImmediate(fn: () => void): unknown;
}

const NODE_TIMERS: PrepareTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  setImmediate: (fn) => setImmediate(fn),
};

/** How long after a run's `done` the host makes its next isolate, ms (see above). */
export const PREPARE_AFTER_RUN_MS = 3;

export class PrepareAhead<T> {
  private ready: T | undefined;
  /** The deferred make's timer (a timeout after a run; an immediate at start is left to lapse). */
  private pending: unknown;
  /** Bumped by `take`: a deferred make scheduled before it no longer runs. */
  private generation = 0;
  private busy = false;
  /** Isolates made ahead (not on a run's path); for tests and the bench. */
  made = 0;
  /** Runs that found none ready and made theirs on their path. */
  madeOnPath = 0;

  private readonly make: () => T;
  private readonly discard: (item: T) => void;
  private readonly onError: (e: unknown) => void;
  private readonly afterRunMs: number;
  private readonly timers: PrepareTimers;

  constructor(
    make: () => T,
    discard: (item: T) => void,
    onError: (e: unknown) => void,
    afterRunMs = PREPARE_AFTER_RUN_MS,
    timers: PrepareTimers = NODE_TIMERS,
  ) {
    this.make = make;
    this.discard = discard;
    this.onError = onError;
    this.afterRunMs = afterRunMs;
    this.timers = timers;
  }

  /** The host is idle (`afterRun`: a run just ended): make the next isolate soon, unless one is ready. */
  schedule(afterRun: boolean): void {
    if (this.ready !== undefined || this.pending !== undefined) return;
    const generation = this.generation;
    const go = () => {
      if (generation !== this.generation) return;
      this.pending = undefined;
      if (this.busy || this.ready !== undefined) return;
      try {
        this.ready = this.make();
        this.made++;
      } catch (e) {
        // The run will try again on its own path and report what fails.
        this.onError(e);
      }
    };
    if (afterRun) this.pending = this.timers.setTimeout(go, this.afterRunMs);
    else this.timers.setImmediate(go);
  }

  /** A run starts: the isolate made ahead if it `fits`, else one made now (a deferred make is dropped). */
  take(fits: (item: T) => boolean, makeNow: () => T): T {
    this.busy = true;
    this.generation++;
    this.cancel();
    const ready = this.ready;
    this.ready = undefined;
    if (ready !== undefined && fits(ready)) return ready;
    if (ready !== undefined) this.discard(ready);
    this.madeOnPath++;
    try {
      return makeNow();
    } catch (e) {
      this.busy = false;
      throw e;
    }
  }

  /** The run ended; `schedule` follows. */
  idle(): void {
    this.busy = false;
  }

  private cancel(): void {
    if (this.pending === undefined) return;
    // A pending immediate is not cleared: it finds its generation past and does nothing.
    this.timers.clearTimeout(this.pending);
    this.pending = undefined;
  }
}
