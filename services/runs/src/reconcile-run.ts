/**
 * Recovery as one pure function: given what Redis says of one run (its record's head, its job,
 * its decisions, its in-flight and paused entries) and the time, the actions that bring it back
 * on its way to a final status. Level-triggered and idempotent: the same inputs give the same
 * actions, and applying them twice is harmless (a job id names its round, a final status is never
 * overwritten, removing an entry twice removes nothing). The loops that gather the inputs and
 * apply the actions (gateway recovery, the runner's failed-job sweep) hold no rules of their own.
 */
import { isFinalStatus } from '@islet/protocol';
import { type DecisionRecord, ESCALATION_INDEX } from './decision-types.ts';
import type { RunHead } from './in-flight-store.ts';
import type { StoredRun } from './run-store.ts';

/** What the run's queue says of its current job. */
type JobView =
  /** Not looked up (the view does not need it). */
  | { state: 'unknown' }
  | { state: 'missing' }
  | { state: 'present' }
  /** BullMQ failed it for good (attempts used up, stalled too often). */
  | { state: 'failed'; reason: string };

export interface RunView {
  /** The record's head; null: no record. */
  record: RunHead | null;
  job: JobView;
  /** The run's decisions (only read for a paused run). */
  decisions?: DecisionRecord[];
  /** Seen in its tenant's in-flight index since this time, ms. */
  inFlightSinceMs?: number;
  /** Counted in its mode's paused-runs set since this time, ms. */
  pausedSinceMs?: number;
  /**
   * One of its decisions expired unanswered and the expiry was handed to this caller
   * (`DecisionStore.expireDue` hands each to exactly one).
   */
  decisionExpired?: boolean;
}

interface ReconcilePolicy {
  /** A run younger than this may still be being submitted, ms. */
  graceMs: number;
  /** A paused run whose decisions are answered is resumed once paused this long, ms. */
  resumeRepairAfterMs: number;
}

export type RecoveryAction =
  /** The answer depends on the run's job: look it up and reconcile again with it. */
  | { type: 'check-job' }
  /** The in-flight entry is not a run in flight: remove it (the tenant's quota place comes back). */
  | { type: 'drop-in-flight' }
  /** The run was stored but its first job never was: queue it (job id = run id). */
  | { type: 'enqueue' }
  /** Wider access allowed before the run ever ran: queue it in its mode. */
  | { type: 'enqueue-escalated' }
  /** Its decisions are answered: Running again and queued for the next round (job id `<run>-r<round>`). */
  | { type: 'resume'; round: number }
  /** Wider access refused (or its request expired): the run ends without running. */
  | { type: 'end-without-running' }
  /** A decision expired unanswered: the run is cancelled with the expiry message. */
  | { type: 'expire' }
  /** Its job failed for good: the run ends Failed (worker-exit), saying why. */
  | { type: 'give-up'; why: string }
  /** It is no longer paused: remove it from its mode's paused-runs set. */
  | { type: 'unmark-paused' };

/** The actions that recover one run (empty: nothing to do, or not yet). */
export function reconcileRun(view: RunView, nowMs: number, policy: ReconcilePolicy): RecoveryAction[] {
  const { record } = view;
  const paused = view.pausedSinceMs !== undefined;
  // Ends the run unless it already ended (then the first final status stands).
  if (view.decisionExpired) return record ? [{ type: 'expire' }] : [];
  if (!record) {
    const actions: RecoveryAction[] = [];
    // No record: the create died between its tenant half and its record (never acknowledged), or
    // the record is past retention. A young entry may still be getting its record.
    if (view.inFlightSinceMs !== undefined && nowMs - view.inFlightSinceMs >= policy.graceMs)
      actions.push({ type: 'drop-in-flight' });
    if (paused) actions.push({ type: 'unmark-paused' });
    return actions;
  }
  if (isFinalStatus(record.status)) {
    const actions: RecoveryAction[] = [];
    // The end's tenant half was lost, or the run ended while paused.
    if (view.inFlightSinceMs !== undefined) actions.push({ type: 'drop-in-flight' });
    if (paused) actions.push({ type: 'unmark-paused' });
    return actions;
  }
  if (view.job.state === 'failed') return [{ type: 'give-up', why: view.job.reason || 'the job failed' }];
  if (paused) return pausedActions(view, nowMs, policy);
  // Stored, acknowledged, never started, old enough, and no job: the gateway died before queueing it.
  if (record.status !== 'Running' || record.attempts !== 0 || nowMs - record.createdAt < policy.graceMs)
    return [];
  if (view.job.state === 'unknown') return [{ type: 'check-job' }];
  return view.job.state === 'missing' ? [{ type: 'enqueue' }] : [];
}

function pausedActions(view: RunView, nowMs: number, policy: ReconcilePolicy): RecoveryAction[] {
  const all = view.decisions ?? [];
  if (all.some((d) => d.state === 'pending')) return [];
  // A resume a crash interrupted: left alone until it has had time to finish on its own.
  if (nowMs - (view.pausedSinceMs ?? nowMs) < policy.resumeRepairAfterMs) return [];
  const escalation = all.find((d) => d.index === ESCALATION_INDEX);
  if (escalation && all.length === 1)
    return escalation.state === 'allowed'
      ? [{ type: 'enqueue-escalated' }, { type: 'unmark-paused' }]
      : [{ type: 'end-without-running' }];
  return [{ type: 'resume', round: all.filter((d) => d.index !== ESCALATION_INDEX).length }];
}

/** The head of a run read whole. */
export function headOf(run: StoredRun): RunHead {
  return { status: run.status, attempts: run.attempts, createdAt: run.createdAt, mode: run.mode };
}
