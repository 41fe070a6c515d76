/**
 * One engine's deadline timer over its runs' time budgets (time-budget.ts): a single `setTimeout`
 * at the earliest deadline of the budgets counting down, re-armed only when a budget that starts
 * counting has an earlier deadline than the one armed. A run that ends (or pauses its clock) leaves
 * the timer as it is: when it fires it ends every budget whose deadline passed, in deadline order,
 * and arms again at the earliest left, or not at all when none is left. With equal budgets a new
 * run's deadline is never the earliest, so back-to-back and concurrent runs arm no timer of their
 * own (a timer a run was the engine's last `setTimeout` a run: test/bench/README.md, round 48
 * `engine-timers`, round 49 `engine-timers-2`).
 *
 * Deadlines are read on the monotonic clock (`performance.now()`), so a wall clock that jumps moves
 * none. A timer that fires before the earliest deadline (Node's timers count from the loop's cached
 * time) arms again for what is left. Not one wheel a module: a wheel made under a test's fake timers
 * would stay fake for the file's later tests (as the resident ticker, resident-guard.ts).
 */

/** What the wheel ends: a budget counting down (TimeBudget). */
export interface Deadline {
  /** When it ends, `performance.now()` ms; read by the wheel only while the deadline is added. */
  readonly deadlineAt: number;
  /** The deadline passed: called once, after the wheel removed it. */
  expire(): void;
}

export class DeadlineWheel {
  private readonly deadlines = new Set<Deadline>();
  private timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is armed for (Infinity: no timer). */
  private armedAt = Number.POSITIVE_INFINITY;
  private closed = false;
  /** How often its timer was armed (the counts' and the tests' figure: not once a run). */
  armed = 0;
  private readonly fire = () => this.onTimer();

  /** Counts `d` down; its `deadlineAt` must not change until it is removed or expires. */
  add(d: Deadline): void {
    if (this.closed) return;
    this.deadlines.add(d);
    if (d.deadlineAt < this.armedAt) this.arm(d.deadlineAt);
  }

  /** `d` no longer ends here (its run ended or its clock paused); the timer stays as it is. */
  remove(d: Deadline): void {
    this.deadlines.delete(d);
  }

  /** Deadlines counting down now. */
  get size(): number {
    return this.deadlines.size;
  }

  /** A timer is armed now. */
  get timerArmed(): boolean {
    return this.timer !== undefined;
  }

  /** Stops the timer (the engine's close); the deadlines still added no longer end. */
  close(): void {
    this.closed = true;
    this.deadlines.clear();
    this.disarm();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedAt = at;
    this.armed++;
    // Whole milliseconds, rounded up: a timer a fraction early would fire for nothing.
    this.timer = setTimeout(this.fire, Math.max(0, Math.ceil(at - performance.now())));
    // The runs it ends hold the process (their hosts' pipes), not the wheel.
    this.timer.unref?.();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }

  private onTimer(): void {
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let due: Deadline[] | undefined;
    for (const d of this.deadlines) {
      if (d.deadlineAt > now) continue;
      due ??= [];
      due.push(d);
    }
    if (due !== undefined) {
      // Earliest first: runs whose deadlines passed together end in the order their budgets ran out.
      due.sort((a, b) => a.deadlineAt - b.deadlineAt);
      for (const d of due) {
        // One that expired before it (its run's end) may have removed it: it ended already.
        if (!this.deadlines.delete(d)) continue;
        try {
          d.expire();
        } catch {
          // Its run guards its own handlers (run.ts `guard`); one that throws ends none of the others.
        }
      }
    }
    // What the expiries left (they may have added or removed deadlines, an added one arming the
    // timer already), re-read: armed at the earliest, or not at all.
    if (this.closed) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const d of this.deadlines) if (d.deadlineAt < earliest) earliest = d.deadlineAt;
    if (earliest < this.armedAt) this.arm(earliest);
  }
}
