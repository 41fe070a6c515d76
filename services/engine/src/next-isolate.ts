/**
 * The sandbox host's isolate for its next run, made while the host idles (a fresh isolate with the
 * harness installed, ~1 ms of CPU on the host's main thread), so that a run starts in a ready one.
 */

/**
 * How long a host that just sent a run's end waits (asleep, in its event loop) before making the
 * next isolate. Made at once, that CPU went ahead of the runner woken by the end whenever the two
 * shared a CPU (a busy machine, or two cores with the rest of a cluster on them): the scheduler
 * (EEVDF) does not preempt the host for the woken runner, so the runner read the end only once the
 * isolate was made, ~1.5 ms later on every run (bench/README, round 34 `engine-mode`).
 */
export const PREPARE_AFTER_RUN_DELAY_MS = 1;
/**
 * A host whose last run came sooner than this after the run before (back to back, or two hosts of a
 * partition alternating) makes its next isolate at once: waiting would leave the next run to make
 * it on arrival (the engine's back-to-back runs lost 14 % with the delay on every run).
 */
export const DELAY_ONLY_AFTER_GAP_MS = 3;
/**
 * The delay is taken only when the host's last gap would also hold the make itself: at least the
 * delay plus this many times the host's last make (its wall time, CPU waits included). A make holds
 * the host's thread (isolated-vm makes an isolate synchronously), so a run that arrives during it
 * waits for the rest: with a fixed 3 ms a host whose make takes ~2 ms (round 42's box, more under
 * load) made it 1 ms after a run's end and a sequential client's next run, ~3.5 ms after, found it
 * still making (test/bench/README.md, round 42 `engine-stage`). Twice: a make's wall time under
 * load varies ~2× from one to the next (CPU waits), and the last one is all the host knows.
 */
export const MAKE_MARGIN = 2;

export class NextIsolate<T extends { memoryMb: number }> {
  private ready: T | undefined;
  private running = false;
  /** The make after the last run, held for the engine's `prepare` (`afterRun`): its heap limit. */
  private held: number | undefined;
  /** The engine's `prepare` for the last run came. */
  private prepared = false;
  /** The delay after the last run's end has not passed yet (taken only after long gaps). */
  private delaying = false;
  /** Runs taken so far: a delay's timer of an earlier run's end does nothing. */
  private epoch = 0;
  private endedAt: number | undefined;
  /** How long the host idled before its last run, ms (Infinity before a second run). */
  private lastGapMs = Number.POSITIVE_INFINITY;
  /** How long the last make ahead held the host's thread, ms (wall time). */
  private lastMakeMs = 0;
  private readonly make: (memoryMb: number) => T;
  private readonly discard: (made: T) => void;
  private readonly failed: (error: unknown) => void;
  private readonly now: () => number;

  // Fields set by hand: the host runs with types stripped, which refuses parameter properties.
  constructor(
    make: (memoryMb: number) => T,
    discard: (made: T) => void,
    failed: (error: unknown) => void,
    now: () => number = () => performance.now(),
  ) {
    this.make = make;
    this.discard = discard;
    this.failed = failed;
    this.now = now;
  }

  /** The last gap at and above which the make waits for the delay (below it, it is made at once). */
  delayOnlyAfterGapMs(): number {
    return Math.max(DELAY_ONLY_AFTER_GAP_MS, PREPARE_AFTER_RUN_DELAY_MS + MAKE_MARGIN * this.lastMakeMs);
  }

  /** The host's start: made on the next turn (the host has nothing else to do). */
  atStart(memoryMb: number): void {
    setImmediate(() => this.makeAhead(memoryMb));
  }

  /**
   * A run ended (its `done` sent, saying `held`): the next isolate is made once the engine has read
   * that `done` (its `prepare`, `release`), and, when the host's last gap holds the delay and the
   * make both, not before `PREPARE_AFTER_RUN_DELAY_MS` after the end; unless a run came first (it
   * makes its own on arrival). Made on the host's next turn or after the delay alone, the make held
   * a CPU the engine, woken by `done` on the same one, waited for: it read the outcome only once the
   * isolate was made (test/bench/README.md, round 50 `engine-stage`).
   */
  afterRun(memoryMb: number): void {
    const delayed = this.lastGapMs >= this.delayOnlyAfterGapMs();
    this.running = false;
    this.endedAt = this.now();
    this.held = memoryMb;
    this.prepared = false;
    this.delaying = delayed;
    if (delayed) {
      const epoch = this.epoch;
      setTimeout(() => {
        if (epoch !== this.epoch) return;
        this.delaying = false;
        if (this.prepared) this.makeHeld();
      }, PREPARE_AFTER_RUN_DELAY_MS);
    }
  }

  /** The engine read the last run's `done` (its `prepare`): the make held after that run. */
  release(): void {
    this.prepared = true;
    if (!this.delaying) this.makeHeld();
  }

  private makeHeld(): void {
    const memoryMb = this.held;
    this.held = undefined;
    if (memoryMb !== undefined) this.makeAhead(memoryMb);
  }

  /** A run's isolate: the one made ahead if its heap limit is the run's, else one made now. */
  take(memoryMb: number): T {
    this.running = true;
    this.held = undefined;
    this.prepared = false;
    this.delaying = false;
    this.epoch++;
    if (this.endedAt !== undefined) this.lastGapMs = this.now() - this.endedAt;
    const ready = this.ready;
    this.ready = undefined;
    if (ready && ready.memoryMb === memoryMb) return ready;
    if (ready) this.discard(ready);
    return this.make(memoryMb);
  }

  private makeAhead(memoryMb: number): void {
    if (this.running || this.ready !== undefined) return;
    const at = this.now();
    try {
      this.ready = this.make(memoryMb);
      this.lastMakeMs = this.now() - at;
    } catch (e) {
      // The run will try again on its own path and report what fails.
      this.failed(e);
    }
  }
}
