/**
 * One timer a worker guarding its blocking pops (pop-wait.ts), where BullMQ's `waitForJob` armed
 * and cleared a `setTimeout` around every `BZPOPMIN`: once a run at one client (round 49
 * `engine-timers-2`). What it guards is BullMQ's: a pop whose connection died without a word (no
 * reply, no close) must still end, its connection dropped and made again, so the worker waits
 * anew. Here a pop sets its deadline (`watch`) and takes it back when it ends (`clear`); the timer
 * is armed only when none is, or when the new deadline is earlier than the one armed. Pops of one
 * length (the drain delay's, +1 s) come one after another: a new one's deadline is always later,
 * so the timer armed for an earlier pop stays, fires, finds the pop under way not due yet and
 * re-arms for what is left of it; an idle worker's timer fires once and is not armed again.
 * Deadlines are `performance.now()` (monotonic: a wall-clock jump moves none).
 */
export class PopWatchdog {
  /** `setTimeout` calls (tests and the probe read it). */
  arms = 0;
  /** The pop under way: its deadline (ms, `performance.now()`) and what its expiry does. */
  private deadlineMs = 0;
  private expire: (() => void) | undefined;
  /** The timer and the deadline it was armed for. */
  private timer: NodeJS.Timeout | undefined;
  private armedForMs = 0;
  private closed = false;

  /** A pop begins: `expire` runs if it has not ended (`clear`) `ms` from now. */
  watch(ms: number, expire: () => void): void {
    const deadline = performance.now() + ms;
    this.deadlineMs = deadline;
    this.expire = expire;
    if (this.closed) return;
    if (this.timer === undefined) this.arm(ms, deadline);
    else if (deadline < this.armedForMs) {
      clearTimeout(this.timer);
      this.arm(ms, deadline);
    }
  }

  /** The pop ended (answered, failed or expired): the timer stays armed for the next. */
  clear(): void {
    this.expire = undefined;
  }

  /** The worker closed: no timer left behind, none armed again. */
  close(): void {
    this.closed = true;
    this.expire = undefined;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number, deadline: number): void {
    this.arms++;
    this.armedForMs = deadline;
    // Rounded up: a timer fires no earlier than its whole ms (a pop's length is whole ms anyway).
    this.timer = setTimeout(this.fired, Math.max(1, Math.ceil(ms)));
    // The pop's connection holds the process while a pop is under way; an idle worker's timer must not.
    this.timer.unref();
  }

  private readonly fired = (): void => {
    this.timer = undefined;
    const expire = this.expire;
    if (expire === undefined || this.closed) return;
    const left = this.deadlineMs - performance.now();
    // Node counts a timer from its loop's cached time: one may fire a little before its deadline.
    if (left > 0) {
      this.arm(left, this.deadlineMs);
      return;
    }
    this.expire = undefined;
    expire();
  };
}
