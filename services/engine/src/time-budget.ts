/**
 * A run's wall-clock budget. It counts down only while running (paused while the run waits on
 * binding calls, when the budget excludes those waits) and calls `onExpired` once it is spent.
 * It lives in the engine, outside V8, so a program that never yields still meets its deadline.
 */
export class TimeBudget {
  private leftMs: number;
  private startedAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly onExpired: () => void;

  /** `budgetMs` null: no deadline. */
  constructor(budgetMs: number | null, onExpired: () => void) {
    this.leftMs = budgetMs ?? Number.POSITIVE_INFINITY;
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

  /** The run is over: the deadline can no longer fire. */
  stop(): void {
    clearTimeout(this.timer);
  }
}
