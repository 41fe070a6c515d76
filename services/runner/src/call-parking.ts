/**
 * Parking for one execution of a run: sits between the replaying handler and the gateway client
 * and watches the run's live binding calls. Once the run waited `parkAfterMs` with calls out and no
 * answer arriving (counted from the stretch's first call or its last answer, whichever came later),
 * the run parks (gives its slot back, slot-gate.ts); an answer that arrives while it is parked reaches
 * the program only after the run took a slot again, so slots bound the CPU work of programs, not
 * their waits. Counted from the stretch's first call instead, a run whose calls were answered one
 * after another (100 parallel calls under load) parked mid-flow, paying a lease release and a
 * take-back for a wait it was not having (test/bench/README.md, round 46 `park-timer`).
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
  /** Stretches armed so far: a lapse's decision is for the stretch it counted only. */
  private stretches = 0;
  /** The timer was made for `parkAfterMs` (not a remainder): `refresh` restarts the full wait. */
  private timerFull = false;
  /**
   * `performance.now()` of the last answer that left calls out (none in a run whose calls go one
   * at a time: they pay nothing). The lapse parks only if the run has waited `parkAfterMs` since.
   */
  private answeredAt = Number.NEGATIVE_INFINITY;
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
          // An answer with calls still out: the run is not waiting on a stuck call (see `lapse`).
          if (--this.inFlight > 0) this.answeredAt = performance.now();
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
    this.stretches++;
    if (this.timer && this.timerFull) this.timer.refresh();
    else this.start(this.parkAfterMs);
  }

  private start(ms: number): void {
    clearTimeout(this.timer);
    this.timerFull = ms === this.parkAfterMs;
    this.timer = setTimeout(() => this.lapse(), ms);
    this.timer.unref();
  }

  private lapse(): void {
    // A stretch that ended before its time was up: nothing to park.
    if (!this.armed || this.inFlight === 0 || this.parked || this.closed || this.released) {
      this.armed = false;
      return;
    }
    // Decided after this turn's I/O (check phase): a runner starved of CPU runs its due timers
    // before it reads the answers already waiting on its sockets, and parked runs whose answers
    // had come. The stretch is still armed meanwhile (a call made now starts nothing new).
    const stretch = this.stretches;
    setImmediate(() => this.decide(stretch));
  }

  private decide(stretch: number): void {
    // Not the stretch the timer counted (it ended and another began meanwhile): its own timer runs.
    if (stretch !== this.stretches) return;
    const armed = this.armed;
    this.armed = false;
    if (!armed || this.inFlight === 0 || this.parked || this.closed || this.released) return;
    // An answer came less than `parkAfterMs` ago (an answer of an earlier stretch is older than
    // this stretch's start, so it never defers): wait the rest from it. At most one timer a lapse.
    const quiet = performance.now() - this.answeredAt;
    if (quiet < this.parkAfterMs) {
      this.armed = true;
      this.start(Math.max(1, Math.ceil(this.parkAfterMs - quiet)));
      return;
    }
    this.parked = this.slot.park(() => this.release());
    // No room among the parked runs: it keeps its slot and tries again later.
    if (!this.parked) this.arm();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerFull = false;
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
