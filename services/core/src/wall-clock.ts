/**
 * The wall clock with a fraction of a ms, comparable between the processes of one machine: the
 * stamps of a run's stages (`timings`) come from the gateway and the runner, and a stage is the
 * difference of two processes' stamps. `performance.timeOrigin + performance.now()` is not that:
 * Node reads the origin's monotonic and wall parts at two moments of its start, and a process
 * preempted between them (a loaded machine) keeps the gap for its whole life — 16 and 40 ms seen
 * (test/bench/README.md, round 29, `pickup`), read as a pick-up of 14 ms or an end's stage below 0.
 *
 * Here the offset between the wall clock and this process's monotonic clock is read at edges of a
 * ms of `Date.now()` (spun for: a few ms, once): right after `Date.now()` turns to N the wall clock
 * is N plus the few µs of the read. It is read again when `Date.now()` and the stamp part by
 * more than 1.5 ms (a step or a long slew of the wall clock since).
 */

let offset: number | undefined;

/** Edges of a ms of `Date.now()` read for the offset (the largest estimate is kept). */
const EDGES = 4;
/** Spins at most this many edges for them: an edge seen across a preemption is not one. */
const TRIES = 12;
/** The widest window (ms) around a change of `Date.now()` for it to place the edge. */
const TIGHT_MS = 0.02;

/** Reads of the offset (tests read it). */
export const wallClockReads = { anchors: 0 };

/**
 * `Date.now()` never turns before the wall clock reaches its ms, but is seen turning up to ~1 ms
 * late at some edges (measured here: estimates 0.1–1 ms below the others); so each edge gives a
 * lower bound (the read after the change), and the largest of a few is the offset, within the
 * window. A change seen across a preemption (a wide window) is no edge.
 */
function anchor(): number {
  let best = Number.NEGATIVE_INFINITY;
  let loose = Number.NEGATIVE_INFINITY;
  for (let k = 0, edges = 0; k < TRIES && edges < EDGES; k++) {
    let was = Date.now();
    let before = performance.now();
    for (;;) {
      const wall = Date.now();
      const after = performance.now();
      if (wall !== was) {
        const estimate = wall - after;
        if (after - before < TIGHT_MS) {
          edges++;
          if (estimate > best) best = estimate;
        } else if (estimate > loose) loose = estimate;
        break;
      }
      was = wall;
      before = after;
    }
  }
  wallClockReads.anchors++;
  return best > Number.NEGATIVE_INFINITY ? best : loose;
}

/** ms since the epoch with its fraction (the stages' stamps). */
export function wallNow(): number {
  const mono = performance.now();
  let o = offset;
  if (o === undefined) {
    o = anchor();
    offset = o;
    return o + performance.now();
  }
  const stamp = o + mono;
  // Date.now() floors: the stamp is in [Date.now(), Date.now() + 1) while the two agree; a
  // preemption between the two reads moves that by its length, so only a clear step re-reads.
  const apart = stamp - Date.now();
  if (apart < -1.5 || apart > 2.5) {
    // Descheduled between the two reads (a loaded machine) is no step: the stamp stands, and no
    // anchor's few ms of spinning land on a run's path for it.
    if (performance.now() - mono > 1) return stamp;
    o = anchor();
    offset = o;
    return o + performance.now();
  }
  return stamp;
}
