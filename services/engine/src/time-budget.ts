/**
 * A run's wall-clock budget. It counts down only while running (paused while the run waits on
 * binding calls, when the budget excludes those waits) and calls `onExpired` once it is spent.
 * It lives in the engine, outside V8, so a program that never yields still meets its deadline.
 * Its deadline is kept by the engine's one timer over its runs' deadlines (deadline-wheel.ts), not
 * a timer of its own; counted on the monotonic clock (`performance.now()`), which no wall-clock
 * jump moves.
 */
import type { Deadline, DeadlineWheel } from './deadline-wheel.ts';

export class TimeBudget implements Deadline {
  private leftMs: number;
  private readonly budgetMs: number;
  private startedAt: number | undefined;
  private readonly onExpired: () => void;
  private readonly wheel: DeadlineWheel;
  /** While counting down: when it is spent (`performance.now()` ms). */
  deadlineAt = Number.POSITIVE_INFINITY;

  /** `budgetMs` null: no deadline. `spentMs`: already used by an earlier execution of the run. */
  constructor(budgetMs: number | null, onExpired: () => void, wheel: DeadlineWheel, spentMs = 0) {
    this.budgetMs = budgetMs ?? Number.POSITIVE_INFINITY;
    this.leftMs = this.budgetMs - Math.max(0, spentMs);
    this.onExpired = onExpired;
    this.wheel = wheel;
  }

  resume(): void {
    if (this.startedAt !== undefined || !Number.isFinite(this.leftMs)) return;
    const now = performance.now();
    this.startedAt = now;
    this.deadlineAt = now + Math.max(0, this.leftMs);
    this.wheel.add(this);
  }

  pause(): void {
    if (this.startedAt === undefined) return;
    this.leftMs -= performance.now() - this.startedAt;
    this.startedAt = undefined;
    this.wheel.remove(this);
  }

  /** Called by the wheel once the deadline passed (it removed this budget first). */
  expire(): void {
    if (this.startedAt === undefined) return;
    // The countdown that ran out is counted: a timed-out run reports at least its whole budget as
    // spent (until round 49 it reported only what earlier countdowns spent, 0 on a first execution).
    this.leftMs -= performance.now() - this.startedAt;
    this.startedAt = undefined;
    this.onExpired();
  }

  /** The deadline is counting down now (a deadline exists and the clock is not paused). */
  running(): boolean {
    return this.startedAt !== undefined;
  }

  /** What is left now, ms (Infinity without a deadline). */
  remainingMs(): number {
    return this.startedAt === undefined ? this.leftMs : this.leftMs - (performance.now() - this.startedAt);
  }

  /** Counted so far, ms, earlier executions' share included (undefined without a deadline). */
  spentMs(): number | undefined {
    return Number.isFinite(this.budgetMs) ? this.budgetMs - this.remainingMs() : undefined;
  }

  /** The run is over: the deadline can no longer fire. */
  stop(): void {
    this.wheel.remove(this);
  }
}
