/**
 * Bytes a run's structures allocate in the runner process, counted as V8's heap growth (no GC
 * between the two reads: semi-spaces of 64–128 MB; `--trace-gc` shows none in a measure): a running job's controls made eagerly (three
 * `AbortController`s, the engine's handle, the controls' object, the job's object) against the
 * runner's `RunJob` (signals made when asked for), and a `Map`/`Set` going from one entry to none
 * against `OneSlotMap`/`OneSlotSet`. Counts, not times: the same on a loaded box.
 *
 *   node --expose-gc --min-semi-space-size=64 --max-semi-space-size=128 test/bench/alloc-probe.ts
 */
import { getHeapSpaceStatistics } from 'node:v8';
import { RunCancel } from '@islet/engine';
import { OneSlotMap } from '../../services/runner/src/one-slot-map.ts';
import { OneSlotSet } from '../../services/runner/src/one-slot-set.ts';
import { RunJob } from '../../services/runner/src/run-job.ts';

const N = 20_000;
// All spaces: V8 makes a Map's or Set's new table in old space, not new space.
const heapUsed = () => getHeapSpaceStatistics().reduce((sum, s) => sum + s.space_used_size, 0);

/** Bytes a round of `fn` allocates: the median of 5 measures of N rounds each. */
function bytesARound(fn: (i: number) => unknown): number {
  const keep: unknown[] = new Array(N);
  for (let i = 0; i < N; i++) keep[i] = fn(i); // warm (and compile) first
  const out: number[] = [];
  for (let r = 0; r < 5; r++) {
    keep.fill(undefined);
    globalThis.gc?.();
    const before = heapUsed();
    for (let i = 0; i < N; i++) keep[i] = fn(i);
    out.push((heapUsed() - before) / N);
  }
  return out.sort((a, b) => a - b)[2] as number;
}

const eager = (i: number) => {
  const ctl = {
    cancel: new AbortController(),
    handBack: new AbortController(),
    stop: new AbortController(),
    engine: new RunCancel(),
  };
  const job = {
    runId: `r${i}`,
    mode: 'read-only',
    enqueuedAtMs: 1,
    fetchedAtMs: 2,
    cancel: ctl.cancel.signal,
    handBack: ctl.handBack.signal,
    stop: ctl.stop.signal,
    stopEngine: ctl.engine,
  };
  return [ctl, job];
};
const lazy = (i: number) => new RunJob(`r${i}`, 'read-only', 1, 2, undefined, undefined);
// The run id's string is made on both sides: measured alone, to take it off.
const idOnly = (i: number) => `r${i}`;

const map = new Map<string, number>();
const ours = new OneSlotMap<string, number>();
const set = new Set<string>();
const oursSet = new OneSlotSet<string>();
const tokens = Array.from({ length: N }, (_, i) => `t${i}`);
const mapCycle = (i: number) => {
  map.set(tokens[i] as string, i);
  map.delete(tokens[i] as string);
};
const oursCycle = (i: number) => {
  ours.set(tokens[i] as string, i);
  ours.delete(tokens[i] as string);
};
const setCycle = (i: number) => {
  set.add(tokens[i] as string);
  set.delete(tokens[i] as string);
};
const oursSetCycle = (i: number) => {
  oursSet.add(tokens[i] as string);
  oursSet.delete(tokens[i] as string);
};

const id = bytesARound(idOnly);
console.log(
  `a running job's controls, eager (3 AbortControllers): ${(bytesARound(eager) - id).toFixed(0)} B`,
);
console.log(`a RunJob, no signal asked for:                      ${(bytesARound(lazy) - id).toFixed(0)} B`);
console.log(
  `a RunJob with its stop signal asked for:            ${(bytesARound((i) => lazy(i).stop) - id).toFixed(0)} B`,
);
console.log(`Map: one entry set and deleted:     ${bytesARound(mapCycle).toFixed(0)} B`);
console.log(`OneSlotMap: the same:               ${bytesARound(oursCycle).toFixed(0)} B`);
console.log(`Set: one member added and deleted:  ${bytesARound(setCycle).toFixed(0)} B`);
console.log(`OneSlotSet: the same:               ${bytesARound(oursSetCycle).toFixed(0)} B`);
