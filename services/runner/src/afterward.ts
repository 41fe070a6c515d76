/**
 * Bookkeeping a run's path does not wait for (its metrics: run-executor.ts), run once the current
 * turn of the event loop is over, so the program's write to its host, and the end's to Redis, go
 * first. One `setImmediate` a turn for whatever every run queued in it, not one a piece: a run
 * queued two (its queue wait at its pick-up, its duration at its end), each an immediate armed and
 * run (round 47 `runner-cpu`: 2.58 → 1.45 immediates a run at 16 clients).
 */

/** Queued for after this turn, and the list the last turn emptied (reused: no array a turn). */
let later: (() => void)[] = [];
let spare: (() => void)[] = [];
/** Turns that ran queued work (tests read it: a count, not a time). */
let turns = 0;

/** Runs what `afterward` queued, in order; what it queues meanwhile waits for the next turn. */
function runLater(): void {
  const work = later;
  later = spare;
  turns++;
  try {
    for (let i = 0; i < work.length; i++) (work[i] as () => void)();
  } finally {
    work.length = 0;
    spare = work;
  }
}

/** `work` after the current turn, with everything else queued in it, in order. */
export function afterward(work: () => void): void {
  if (later.push(work) === 1) setImmediate(runLater);
}

/** How many turns ran queued work so far. */
export const afterwardTurns = (): number => turns;
