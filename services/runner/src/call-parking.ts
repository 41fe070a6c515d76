/**
 * Parking for one execution of a run: sits between the replaying handler and the gateway client
 * and watches the run's live binding calls. Once a call went `parkAfterMs` without an answer, the
 * run parks (gives its slot back, slot-gate.ts); an answer that arrives while it is parked reaches
 * the program only after the run took a slot again, so slots bound the CPU work of programs, not
 * their waits.
 *
 * Released (over the parked-isolate budget): every call the engine waits on is answered at once
 * with a `suspended` stop, so the engine ends the isolate and frees its host, while the real
 * requests keep going: the gateway still journals their outcomes. `settled()` says when all have,
 * and the run then replays from its journal (run-executor.ts): those calls come back `done`, none
 * is sent twice.
 */
import type { BindingCall } from '@islet/protocol';
import type { LiveOutcome } from '@islet/runs';

/** What the executor's slot offers an execution (the runner's RunSlot). */
export interface ExecutionSlot {
  /** Gives the slot back while the run waits; false when it must keep it (no parking room). */
  park(release: () => void): boolean;
  /** Takes a slot again (runs coming back go before new jobs); its lease's take-back is not awaited. */
  resume(): Promise<void>;
  /** The run is over: a resume's take-back not sent is dropped, one sent is what to await before the lease ends. */
  leaseEnding?(): Promise<void> | undefined;
}

const RELEASED: LiveOutcome = {
  outcome: {
    type: 'stop',
    code: 'suspended',
    message: 'the run was parked without its isolate; it replays when its calls are answered',
  },
};

export class CallParking {
  /** The isolate was released: the engine's outcome is not the run's; the run replays. */
  released = false;
  private parked = false;
  private inFlight = 0;
  /**
   * Made at the first call and restarted (`refresh`) at the first call of each later stretch with
   * calls out; between stretches it is left to lapse, not cleared: a call one after another made
   * and cleared a timer each, both on the call's path (README round 30, call-lone).
   */
  private timer: NodeJS.Timeout | undefined;
  /** The timer counts down the current stretch with calls out. */
  private armed = false;
  private resuming: Promise<void> | undefined;
  private readonly early = new Set<() => void>();
  private readonly real = new Set<Promise<unknown>>();
  private closed = false;
  private readonly slot: ExecutionSlot;
  private readonly parkAfterMs: number;

  constructor(slot: ExecutionSlot, parkAfterMs: number) {
    this.slot = slot;
    this.parkAfterMs = parkAfterMs;
  }

  /** The parking-aware `live` for the replaying handler. */
  wrap(live: (call: BindingCall) => Promise<LiveOutcome>): (call: BindingCall) => Promise<LiveOutcome> {
    return (call) => {
      if (this.released) return Promise.resolve(RELEASED);
      const real = live(call);
      this.inFlight++;
      const settledReal = real.then(
        () => undefined,
        () => undefined,
      );
      this.real.add(settledReal);
      void settledReal.then(() => this.real.delete(settledReal));
      this.arm();
      return new Promise<LiveOutcome>((resolve, reject) => {
        const answerNow = () => resolve(RELEASED);
        this.early.add(answerNow);
        const deliver = async (settle: () => void) => {
          this.inFlight--;
          // The execution is over (a deadline, a cancel): nothing to hand the answer to.
          if (this.closed) return;
          if (this.parked && !this.released) await this.resume();
          // Released meanwhile: the engine already has its stop; the journal keeps this answer.
          if (!this.early.delete(answerNow)) return;
          settle();
          if (this.inFlight === 0) this.armed = false;
          else this.arm();
        };
        real.then(
          (answer) => void deliver(() => resolve(answer)),
          (error: unknown) => void deliver(() => reject(error)),
        );
      });
    };
  }

  /** Resolves once every request this execution sent has its answer (journaled by the gateway). */
  async settled(): Promise<void> {
    while (this.real.size > 0) await Promise.all([...this.real]);
  }

  /** The execution ended: no more parking. Whether the run is parked now (holding no slot). */
  close(): boolean {
    this.closed = true;
    this.disarm();
    return this.parked;
  }

  /** Takes a slot again after the wait (once, however many answers arrive together). */
  resume(): Promise<void> {
    this.resuming ??= this.slot.resume().then(() => {
      this.parked = false;
      this.resuming = undefined;
    });
    return this.resuming;
  }

  private arm(): void {
    if (this.armed || this.parked || this.closed || this.released) return;
    this.armed = true;
    if (this.timer) this.timer.refresh();
    else {
      this.timer = setTimeout(() => this.lapse(), this.parkAfterMs);
      this.timer.unref();
    }
  }

  private lapse(): void {
    const armed = this.armed;
    this.armed = false;
    // A stretch that ended before its time was up: nothing to park.
    if (!armed || this.inFlight === 0 || this.parked || this.closed || this.released) return;
    this.parked = this.slot.park(() => this.release());
    // No room among the parked runs: it keeps its slot and tries again later.
    if (!this.parked) this.arm();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armed = false;
  }

  private release(): void {
    if (this.released) return;
    this.released = true;
    this.disarm();
    for (const answerNow of this.early) answerNow();
    this.early.clear();
  }
}
