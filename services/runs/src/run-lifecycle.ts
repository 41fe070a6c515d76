/**
 * A run's failure records, built in one place: every run that ends failed or cancelled — its
 * program's own failure as the runner maps it, or an end outside its program (cancelled, expired
 * decision, Code Mode off, a runner giving up) — ends with this shape, and its result text names
 * the failure kind the way the engine's does.
 */
import { keys } from '@islet/core';
import type { FailureKind, FailureReason, LogLineRecord, RunResult } from '@islet/protocol';
import type { LeaseTerms, RunLease } from './lease-scripts.ts';
import type { RunUsage } from './run-index-writes.ts';
import type { RunStore } from './run-store.ts';
import type { BegunAttempt, CallJournal } from './types.ts';

interface FailedEnd {
  status: 'Failed' | 'Cancelled';
  result: RunResult;
  text: string;
  kind: FailureKind;
}

interface FailureSpec {
  status: 'Failed' | 'Cancelled';
  reason: FailureReason;
  kind: FailureKind;
  message: string;
  /** The result names its kind (default); a run refused before it ran names only its reason. */
  kindInResult?: boolean;
  /** What the program printed (none for a run that never ran). */
  logs?: LogLineRecord[];
  /** Which value could not be carried and how to return it instead. */
  detail?: string;
  /** Where an uncaught error was thrown (1-based); kept only with both. */
  line?: number;
  column?: number;
  /** The error's stack, trimmed to the program's frames. */
  stack?: string;
  /** The result text when the program ran (the engine renders it with its output); else built here. */
  text?: string;
}

/** The end of a run that failed or was cancelled, in or outside its program. */
export function failedEnd(spec: FailureSpec): FailedEnd {
  const { status, reason, kind, message } = spec;
  const result: RunResult = {
    _tag: 'Failed',
    reason,
    ...(spec.kindInResult === false ? {} : { kind }),
    message,
    logs: spec.logs ?? [],
    ...(spec.detail ? { detail: spec.detail } : {}),
    ...(spec.line !== undefined && spec.column !== undefined ? { line: spec.line, column: spec.column } : {}),
    ...(spec.stack ? { stack: spec.stack } : {}),
  };
  return { status, result, text: spec.text ?? `code run failed (${kind}): ${message}`, kind };
}

/** A run stopped from outside (a cancel, an expired decision): reason Cancelled, kind abort. */
export function cancelledEnd(status: 'Failed' | 'Cancelled', message: string): FailedEnd {
  return failedEnd({ status, reason: 'Cancelled', kind: 'abort', message });
}

/** The status changes a run goes through, each in one place. */
interface RunLifecycleDeps {
  runs: RunStore;
  journal: Pick<CallJournal, 'beginAttempt' | 'fetchedAttempt' | 'fetchedStart'>;
}

/**
 * The only way a run's status changes: admitted (`RunStore.create`), an attempt begun (Running,
 * counted, journal read: one script), suspended for a decision or a client call (Waiting), resumed
 * (Running), finished with its program's outcome, failed or cancelled outside its program, or
 * given up by a runner. The final ones never overwrite a final status (the first one stands).
 */
export function createRunLifecycle(deps: RunLifecycleDeps) {
  const { runs, journal } = deps;
  // One maker for every fetch: the start's fixed arguments are made once for it (lease-scripts.ts).
  const startEvent = (runId: string) => runs.attemptStartEvent(runId);
  /** An attempt's start as the journal answered it, read into the run (`beginAttempt`). */
  const attemptOf = (begun: BegunAttempt, lease: RunLease | undefined) => {
    if (lease && begun.lease) lease.acquired(begun.lease);
    const { runFields, ...rest } = begun;
    if (begun.lease && !begun.lease.ok) return { ...rest, run: null, deferred: true };
    // The description is the gateway's to show: a runner never reads it (run-reads.ts `fromHash`).
    const run = runs.fromFields(runFields, 'unread');
    // The lease joins the run read (not a copy of it, which would read its every field).
    return { ...rest, run: run && lease ? Object.assign(run, { lease }) : run, deferred: false };
  };
  return {
    /** Admission and the record, one step (see `RunStore.create`). */
    admit: (...args: Parameters<RunStore['create']>) => runs.create(...args),
    /**
     * Counts an attempt and marks the run Running, unless it ended or is being cancelled (then
     * `attempt` is undefined); returns the record as it was read (null: none) and the journal.
     * With a slot lease (one server), the lease is decided first in the same script: refused
     * (`deferred`), nothing of the run was read or written; granted, the run carries the lease, so
     * its end (`finish`, `fail`, `cancel`) gives it back in the end's own script. The run's
     * `description` is `''`: its caller, a runner, never reads it.
     */
    async beginAttempt(runId: string, lease?: RunLease) {
      return attemptOf(
        await journal.beginAttempt(runId, keys.run(runId), runs.attemptStartEvent(runId), lease),
        lease,
      );
    },
    /**
     * `beginAttempt` for a run whose worker's fetch began the attempt (its lease's `begun`), in the
     * caller's turn: the same answer without a promise (nothing is asked of Redis then either), so
     * a runner's pick-up reaches its engine in the turn its processor started in. Undefined when
     * the lease carries no such answer (`beginAttempt` then).
     */
    fetchedAttempt(lease: RunLease | undefined) {
      const begun = lease && journal.fetchedAttempt(lease);
      return begun ? attemptOf(begun, lease) : undefined;
    },
    /**
     * What a worker's fetch adds to BullMQ's arguments so that it also takes the job's lease and
     * begins its run's attempt, as `beginAttempt` with a lease would (one server only; see
     * `CallJournal.fetchedStart`). Made at each fetch: the start's time is the fetch's.
     */
    fetchedStart(lease: Omit<LeaseTerms, 'tenant' | 'jobId'>) {
      return journal.fetchedStart({
        ...lease,
        runKey: keys.run,
        start: startEvent,
      });
    },
    /** Waiting: for a decision, a client call's answer, a wider mode. */
    suspend(run: { id: string; tenant: string }, data: Record<string, unknown> = {}) {
      return runs.setStatus(run, 'Waiting', data);
    },
    /** Running again: a decision allowed, a call answered, a resume queued. */
    resume(run: { id: string; tenant: string }, data: Record<string, unknown> = {}) {
      return runs.setStatus(run, 'Running', data);
    },
    /** The program's own end. False when the run had already ended. */
    finish: (...args: Parameters<RunStore['finish']>) => runs.finish(...args),
    /** Failed (or Cancelled) outside its program, with the failure record built here. */
    fail(run: Parameters<RunStore['finish']>[0], spec: FailureSpec & { usage?: RunUsage }) {
      const { usage, ...failure } = spec;
      return runs.finish(run, { ...failedEnd(failure), ...(usage ? { usage } : {}) });
    },
    /** Stopped from outside: a cancel, an expired decision. */
    cancel(
      run: Parameters<RunStore['finish']>[0],
      message: string,
      status: 'Failed' | 'Cancelled' = 'Cancelled',
    ) {
      return runs.finish(run, cancelledEnd(status, message));
    },
    /** A runner could not finish the run (its job failed for good, it stalled too often). */
    giveUp(run: Parameters<RunStore['finish']>[0], why: string) {
      return runs.finish(run, giveUpEnd(why));
    },
  };
}

export type RunLifecycle = ReturnType<typeof createRunLifecycle>;

/** The end of a run a runner gave up on. */
export function giveUpEnd(why: string): FailedEnd {
  return failedEnd({
    status: 'Failed',
    reason: 'Unavailable',
    kind: 'worker-exit',
    message: `Islet could not finish the run: ${why}`,
  });
}
