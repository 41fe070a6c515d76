/**
 * What a binding call needs from its run (tenant, mode, program, bindings, approval, session)
 * never changes after submit, so the call route keeps it briefly: a program's many calls cost one
 * record read, not one each, and a burst of parallel calls (a `Promise.all`) waits on one read.
 *
 * A run this gateway admitted is put in at its submit (`seed`, runs-service.ts), when it names
 * Apps: its first call then reads no record either (round 39, `call-path`: a Redis round trip and
 * the record's open off every run's first call on the gateway that took it). A call served by
 * another replica reads the record as before. Only a run that exists stays: a read that finds
 * none (or fails) is dropped, and nothing is seeded before the admission said `created`.
 */
import { BoundedMap } from '@islet/core';
import type { StoredRun } from '@islet/runs';

/** Runs kept: the most recent ones, whichever way they came in. */
const MAX_RUNS = 1000;
/** How long a kept run serves calls before it is read again, ms. */
const KEEP_MS = 30_000;

export class CallRunCache {
  readonly #runs = new BoundedMap<string, { run: Promise<StoredRun | null>; at: number }>(MAX_RUNS);

  /** The run `runId`, kept or read by `read` (null: no such run). */
  get(runId: string, read: (runId: string) => Promise<StoredRun | null>): Promise<StoredRun | null> {
    const hit = this.#runs.get(runId);
    if (hit && Date.now() - hit.at < KEEP_MS) return hit.run;
    const run = read(runId);
    const entry = { run, at: Date.now() };
    this.#runs.set(runId, entry);
    run.then(
      (r) => {
        if (!r && this.#runs.get(runId) === entry) this.#runs.delete(runId);
      },
      () => {
        if (this.#runs.get(runId) === entry) this.#runs.delete(runId);
      },
    );
    return run;
  }

  /**
   * A run just admitted (`created`) by this gateway, as it was stored: kept for its calls when it
   * names Apps (a run without bindings makes no call this route serves).
   */
  seed(run: StoredRun): void {
    if (run.request.bindings.length === 0) return;
    this.#runs.set(run.id, { run: Promise.resolve(run), at: Date.now() });
  }

  /** Whether `runId` is kept now (tests). */
  has(runId: string): boolean {
    return this.#runs.has(runId);
  }
}
