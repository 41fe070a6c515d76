/**
 * The sandbox host's isolate for its next run, made while the host idles (a fresh isolate with the
 * harness installed, ~1 ms of CPU on the host's main thread), so that a run starts in a ready one.
 */

/**
 * How long a host that just sent a run's end sleeps (its main thread blocked, the CPU given away)
 * before making the next isolate. Made at once, that CPU went ahead of the runner woken by the end
 * whenever the two shared a CPU (a busy machine, or two cores with the rest of a cluster on them):
 * the scheduler (EEVDF) does not preempt the host for the woken runner, so the runner read the end
 * only once the isolate was made, ~1.5 ms later on every run (bench/README, round 34 `engine-mode`).
 * Short: runs of one partition alternating between two hosts each find their isolate made while the
 * other ran (a 1 ms timer instead cost the engine's back-to-back runs 14 %).
 */
export const YIELD_AFTER_RUN_MS = 0.2;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this thread for `ms` (a futex wait nobody wakes): the scheduler runs whoever is waiting. */
export function sleepThread(ms: number): 'ok' | 'not-equal' | 'timed-out' {
  return Atomics.wait(sleeper, 0, 0, ms);
}

export class NextIsolate<T extends { memoryMb: number }> {
  private ready: T | undefined;
  private running = false;
  private readonly make: (memoryMb: number) => T;
  private readonly discard: (made: T) => void;
  private readonly failed: (error: unknown) => void;
  private readonly sleep: (ms: number) => unknown;

  // Fields set by hand: the host runs with types stripped, which refuses parameter properties.
  constructor(
    make: (memoryMb: number) => T,
    discard: (made: T) => void,
    failed: (error: unknown) => void,
    sleep: (ms: number) => unknown = sleepThread,
  ) {
    this.make = make;
    this.discard = discard;
    this.failed = failed;
    this.sleep = sleep;
  }

  /** The host's start: made on the next turn (the host has nothing else to do). */
  atStart(memoryMb: number): void {
    setImmediate(() => this.makeAhead(memoryMb));
  }

  /** A run ended (its end sent): made on the next turn after `YIELD_AFTER_RUN_MS` asleep, unless a run came first. */
  afterRun(memoryMb: number): void {
    this.running = false;
    setImmediate(() => {
      if (this.running || this.ready !== undefined) return;
      this.sleep(YIELD_AFTER_RUN_MS);
      this.makeAhead(memoryMb);
    });
  }

  /** A run's isolate: the one made ahead if its heap limit is the run's, else one made now. */
  take(memoryMb: number): T {
    this.running = true;
    const ready = this.ready;
    this.ready = undefined;
    if (ready && ready.memoryMb === memoryMb) return ready;
    if (ready) this.discard(ready);
    return this.make(memoryMb);
  }

  private makeAhead(memoryMb: number): void {
    if (this.running || this.ready !== undefined) return;
    try {
      this.ready = this.make(memoryMb);
    } catch (e) {
      // The run will try again on its own path and report what fails.
      this.failed(e);
    }
  }
}
