/**
 * The wall clock with a fraction of a ms, comparable between the processes of one machine: the
 * stamps of a run's stages (`timings`) come from the gateway and the runner, and a stage is the
 * difference of two processes' stamps. `performance.timeOrigin + performance.now()` is not that:
 * Node reads the origin's monotonic and wall parts at two moments of its start, and a process
 * preempted between them (a loaded machine) keeps the gap for its whole life — 16 and 40 ms seen
 * (test/bench/README.md, round 29, `pickup`), read as a pick-up of 14 ms or an end's stage below 0.
 *
 * Here the offset between the wall clock and this process's monotonic clock is read at the edge of
 * a ms of `Date.now()` (spun for, at most ~1 ms, once): right after `Date.now()` turns to N the wall
 * clock is N plus the few µs of the read. It is read again when `Date.now()` and the stamp part by
 * more than 1.5 ms (a step or a long slew of the wall clock since).
 */

let offset: number | undefined;

/** Edges of a ms of `Date.now()` read for the offset (the one read closest to its edge is kept). */
const EDGES = 2;

/** Reads of the offset (tests read it). */
export const wallClockReads = { anchors: 0 };

function anchor(): number {
  let best = Number.NEGATIVE_INFINITY;
  for (let k = 0; k < EDGES; k++) {
    const was = Date.now();
    let wall = was;
    while (wall === was) wall = Date.now();
    // Read after the edge: wall - mono is the true offset less the read's delay; the largest is closest.
    const estimate = wall - performance.now();
    if (estimate > best) best = estimate;
  }
  wallClockReads.anchors++;
  return best;
}

/** ms since the epoch with its fraction (the stages' stamps). */
export function wallNow(): number {
  const mono = performance.now();
  let o = offset;
  if (o === undefined) {
    o = anchor();
    offset = o;
    return o + mono;
  }
  const stamp = o + mono;
  // Date.now() floors: the stamp is in [Date.now(), Date.now() + 1) while the two agree; a
  // preemption between the two reads moves that by its length, so only a clear step re-reads.
  const apart = stamp - Date.now();
  if (apart < -1.5 || apart > 2.5) {
    o = anchor();
    offset = o;
    return o + performance.now();
  }
  return stamp;
}
