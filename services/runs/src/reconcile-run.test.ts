/**
 * The recovery matrix: every state a run can be found in by recovery, and what brings it back on
 * its way to a final status. One row per case; the loops that apply the actions are thin.
 */
import { describe, expect, it } from 'vitest';
import type { DecisionRecord } from './decision-types.ts';
import { ESCALATION_INDEX } from './decision-types.ts';
import { type RecoveryAction, type RunView, reconcileRun } from './reconcile-run.ts';

const NOW = 1_000_000;
const POLICY = { graceMs: 60_000, resumeRepairAfterMs: 5_000 };
const OLD = NOW - 120_000;
const YOUNG = NOW - 1_000;

const head = (status: string, attempts = 0, createdAt = OLD) =>
  ({ status, attempts, createdAt, mode: 'read-only' }) as RunView['record'];

const decision = (index: number, state: DecisionRecord['state']): DecisionRecord =>
  ({ tenant: 't', mode: 'read-only', runId: 'r', index, state, request: {} }) as DecisionRecord;

const unknown = { state: 'unknown' } as const;
const missing = { state: 'missing' } as const;
const present = { state: 'present' } as const;

const rows: Array<[string, RunView, RecoveryAction[]]> = [
  // In-flight index entries (the in-flight feed).
  [
    'entry, no record, old: the create died before its record',
    { record: null, job: unknown, inFlightSinceMs: OLD },
    [{ type: 'drop-in-flight' }],
  ],
  [
    'entry, no record, young: the record may still be coming',
    { record: null, job: unknown, inFlightSinceMs: YOUNG },
    [],
  ],
  [
    'entry, record Completed: the end lost its tenant half',
    { record: head('Completed'), job: unknown, inFlightSinceMs: YOUNG },
    [{ type: 'drop-in-flight' }],
  ],
  [
    'entry, record Failed',
    { record: head('Failed'), job: unknown, inFlightSinceMs: OLD },
    [{ type: 'drop-in-flight' }],
  ],
  [
    'entry, record Cancelled',
    { record: head('Cancelled'), job: unknown, inFlightSinceMs: OLD },
    [{ type: 'drop-in-flight' }],
  ],
  [
    'never started, old, job not looked up: look it up',
    { record: head('Running'), job: unknown, inFlightSinceMs: OLD },
    [{ type: 'check-job' }],
  ],
  [
    'never started, old, no job: the gateway died before queueing it',
    { record: head('Running'), job: missing, inFlightSinceMs: OLD },
    [{ type: 'enqueue' }],
  ],
  ['never started, old, its job waits', { record: head('Running'), job: present, inFlightSinceMs: OLD }, []],
  [
    'never started, young: its submit may still be queueing it',
    { record: head('Running', 0, YOUNG), job: missing, inFlightSinceMs: YOUNG },
    [],
  ],
  [
    'started (an attempt counted), no job: a runner holds or held it',
    { record: head('Running', 1), job: missing, inFlightSinceMs: OLD },
    [],
  ],
  [
    'Waiting, not paused: a client call or a held decision',
    { record: head('Waiting', 1), job: missing, inFlightSinceMs: OLD },
    [],
  ],
  // Failed jobs (the runners' failed-jobs feed).
  [
    'job failed for good, run not ended: give up',
    { record: head('Running', 3), job: { state: 'failed', reason: 'job stalled more than allowable limit' } },
    [{ type: 'give-up', why: 'job stalled more than allowable limit' }],
  ],
  [
    'job failed without a reason',
    { record: head('Running', 1), job: { state: 'failed', reason: '' } },
    [{ type: 'give-up', why: 'the job failed' }],
  ],
  [
    'job failed, run already ended: the first final status stands',
    { record: head('Completed', 1), job: { state: 'failed', reason: 'x' } },
    [],
  ],
  ['job failed, no record', { record: null, job: { state: 'failed', reason: 'x' } }, []],
  // Paused runs (the paused-runs feed).
  ['paused, no record', { record: null, job: unknown, pausedSinceMs: OLD }, [{ type: 'unmark-paused' }]],
  [
    'paused, ended meanwhile',
    { record: head('Cancelled', 1), job: unknown, pausedSinceMs: OLD },
    [{ type: 'unmark-paused' }],
  ],
  [
    'paused, a decision pending',
    {
      record: head('Waiting', 1),
      job: unknown,
      pausedSinceMs: OLD,
      decisions: [decision(0, 'allowed'), decision(1, 'pending')],
    },
    [],
  ],
  [
    "paused, answered just now: the answer's own resume is under way",
    { record: head('Running', 1), job: unknown, pausedSinceMs: YOUNG, decisions: [decision(0, 'allowed')] },
    [],
  ],
  [
    'paused, all answered, resume interrupted: resume for the next round',
    {
      record: head('Running', 1),
      job: unknown,
      pausedSinceMs: OLD,
      decisions: [decision(0, 'allowed'), decision(1, 'denied')],
    },
    [{ type: 'resume', round: 2 }],
  ],
  [
    'paused for wider access, allowed, never queued',
    {
      record: head('Waiting'),
      job: unknown,
      pausedSinceMs: OLD,
      decisions: [decision(ESCALATION_INDEX, 'allowed')],
    },
    [{ type: 'enqueue-escalated' }, { type: 'unmark-paused' }],
  ],
  [
    'paused for wider access, denied',
    {
      record: head('Waiting'),
      job: unknown,
      pausedSinceMs: OLD,
      decisions: [decision(ESCALATION_INDEX, 'denied')],
    },
    [{ type: 'end-without-running' }],
  ],
  [
    'paused for wider access, its request expired (its expiry under way or interrupted): expire',
    {
      record: head('Waiting'),
      job: unknown,
      pausedSinceMs: OLD,
      decisions: [decision(ESCALATION_INDEX, 'expired')],
    },
    [{ type: 'expire' }],
  ],
  [
    'paused, a call decision expired while another is still pending: expire, never resume',
    {
      record: head('Waiting', 1),
      job: unknown,
      pausedSinceMs: OLD,
      decisions: [decision(0, 'expired'), decision(1, 'pending')],
    },
    [{ type: 'expire' }],
  ],
  [
    'paused, its only decision expired, the run not ended yet: expire, never resume',
    {
      record: head('Waiting', 1),
      job: unknown,
      pausedSinceMs: YOUNG,
      decisions: [decision(0, 'expired')],
    },
    [{ type: 'expire' }],
  ],
  [
    'wider access allowed, then a call decision answered: resume round 1',
    {
      record: head('Running', 1),
      job: unknown,
      pausedSinceMs: OLD,
      decisions: [decision(ESCALATION_INDEX, 'allowed'), decision(0, 'allowed')],
    },
    [{ type: 'resume', round: 1 }],
  ],
  // Decision expiry (the expiry claim handed this run's decision to this caller).
  [
    'a decision expired: the run is cancelled',
    { record: head('Waiting', 1), job: unknown, decisionExpired: true },
    [{ type: 'expire' }],
  ],
  [
    'a decision expired, the run already ended: its end stands (the cancel writes nothing)',
    { record: head('Completed', 1), job: unknown, decisionExpired: true },
    [{ type: 'expire' }],
  ],
  ['a decision expired, no record', { record: null, job: unknown, decisionExpired: true }, []],
];

describe('reconcileRun: the recovery matrix', () => {
  it.each(rows)('%s', (_name, view, actions) => {
    expect(reconcileRun(view, NOW, POLICY)).toEqual(actions);
  });

  it('is idempotent: the same view gives the same actions', () => {
    for (const [, view] of rows)
      expect(reconcileRun(view, NOW, POLICY)).toEqual(reconcileRun(view, NOW, POLICY));
  });
});
