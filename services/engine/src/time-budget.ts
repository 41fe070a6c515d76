/**
 * A run's wall-clock budget. It counts down only while running (paused while the run waits on
 * binding calls, when the budget excludes those waits) and calls `onExpired` once it is spent.
 * It lives in the engine, outside V8, so a program that never yields still meets its deadline.
 */
export class TimeBudget {
  private leftMs: number;
  private readonly budgetMs: number;
  private startedAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly onExpired: () => void;

  /** `budgetMs` null: no deadline. `spentMs`: already used by an earlier execution of the run. */
  constructor(budgetMs: number | null, onExpired: () => void, spentMs = 0) {
    this.budgetMs = budgetMs ?? Number.POSITIVE_INFINITY;
    this.leftMs = this.budgetMs - Math.max(0, spentMs);
    this.onExpired = onExpired;
  }

  resume(): void {
    if (this.startedAt !== undefined || !Number.isFinite(this.leftMs)) return;
    this.startedAt = Date.now();
    this.timer = setTimeout(
      () => {
        this.startedAt = undefined;
        this.onExpired();
      },
      Math.max(0, this.leftMs),
    );
  }

  pause(): void {
    if (this.startedAt === undefined) return;
    this.leftMs -= Date.now() - this.startedAt;
    this.startedAt = undefined;
    clearTimeout(this.timer);
  }

  /** The deadline is counting down now (a deadline exists and the clock is not paused). */
  running(): boolean {
    return this.startedAt !== undefined;
  }

  /** What is left now, ms (Infinity without a deadline). */
  remainingMs(): number {
    return this.startedAt === undefined ? this.leftMs : this.leftMs - (Date.now() - this.startedAt);
  }

  /** Counted so far, ms, earlier executions' share included (undefined without a deadline). */
  spentMs(): number | undefined {
    return Number.isFinite(this.budgetMs) ? this.budgetMs - this.remainingMs() : undefined;
  }

  /** The run is over: the deadline can no longer fire. */
  stop(): void {
    clearTimeout(this.timer);
  }
}
