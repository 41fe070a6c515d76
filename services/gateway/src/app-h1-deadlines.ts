/**
 * The whole-call deadlines of the App client's calls (app-h1.ts) on one timer, instead of a timer
 * made and cleared by each call. Why: a call's `setTimeout` + `unref` + `clearTimeout` (a Timeout
 * object, two C++ ref toggles, its list's insertion) was most of the 7.5–14 k instructions a call
 * paid for its deadline, and a run's 100 parallel calls armed 100 timers that almost never fire
 * (test/bench/README.md, round 44 `app-wakeups`, "Found, left"; `call-timers`).
 *
 * Deadlines are kept exact (monotonic `performance.now()`, as a timer's: a step of the wall clock
 * moves nothing), not rounded to a slot: a call is expired at its own due time or just after, never
 * before, whatever the others' (a slow App holds no other call: each entry has its own due time).
 * The one timer is armed for the earliest due time and is not disarmed when a call settles: it
 * fires, expires what is due (in due order), and arms itself for the earliest due time left, if any. A timer that
 * fires a little before its due time by `performance.now()` (the loop's clock is a ms one) finds
 * nothing due and arms again. Unref'd, as each call's timer was: a call is held by its caller.
 */

/** What the deadlines arm (the global timers unless a test counts them). */
export interface DeadlineTimers {
  set(fn: () => void, ms: number): { unref(): unknown };
  clear(timer: { unref(): unknown }): void;
}
export const globalDeadlineTimers: DeadlineTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** An entry: its due time on `performance.now()`'s clock, set by `add`. */
export interface HasDue {
  due: number;
}

/** `onDue(entry)` is called once for each entry added and not removed, at or after its due time. */
export function createDeadlines<T extends HasDue>(
  onDue: (entry: T) => void,
  timers: DeadlineTimers = globalDeadlineTimers,
) {
  const pending = new Set<T>();
  let armedFor = Number.POSITIVE_INFINITY;
  let timer: { unref(): unknown } | undefined;
  const arm = (due: number, now: number) => {
    if (due >= armedFor) return;
    if (timer) timers.clear(timer);
    armedFor = due;
    // Rounded up: a timer of `ms` fires after at least `ms` on the loop's clock.
    timer = timers.set(fire, Math.max(1, Math.ceil(due - now)));
    timer.unref();
  };
  function fire() {
    timer = undefined;
    armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now();
    const due: T[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const entry of pending) {
      if (entry.due <= now) {
        pending.delete(entry);
        due.push(entry);
      } else if (entry.due < next) next = entry.due;
    }
    if (next !== Number.POSITIVE_INFINITY) arm(next, now);
    // A timer that fires late (a loaded box) finds several due at once: expired in due order, as
    // their own timers would have fired, not in the order they were filed (round 45 `call-regress`).
    if (due.length > 1) due.sort((x, y) => x.due - y.due);
    for (const entry of due) onDue(entry);
  }
  return {
    /** Files `entry` to be due `ms` from now. */
    add(entry: T, ms: number): void {
      const now = performance.now();
      entry.due = now + ms;
      pending.add(entry);
      arm(entry.due, now);
    },
    /** Takes `entry` back (settled): it is never passed to `onDue`. */
    remove(entry: T): void {
      pending.delete(entry);
    },
    /** Entries filed and not yet due or removed (a test reads it: none left behind). */
    get pending(): number {
      return pending.size;
    },
  };
}

export type Deadlines<T extends HasDue> = ReturnType<typeof createDeadlines<T>>;
