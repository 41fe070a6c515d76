/**
 * Which of a run's end call's keys and arguments (`finish-run-release-19`, as run-store.ts's finish
 * hands it to the worker's completion) are made from another entry of the same call, for a baked
 * text to make them (baked-call.ts `DerivedEntry`; round 47 `end-keys`): the run's record, events,
 * journal and (round 48) decisions keys from its id (ARGV[1]); the tenant's in-flight, five index,
 * feed and pool-leases keys from its name (ARGV[16]); the tenant half's run id a copy of ARGV[1]; the lease's job id a
 * copy of the job's (the caller's, BullMQ's own argument: a decision round's job id is not the
 * run's). The usage-day, health-hour and stored-bytes keys carry a time part and stay carried.
 *
 * Each key's text after the value is its builder's (keys.ts), read here with a probe value, so a
 * key renamed there is renamed here; the text before it (a prefix, the pool's mode) is a name the
 * baker reads from the call. A call whose entry is not that concatenation is not baked.
 */
import { keys } from '@islet/core';
import type { DerivedEntry } from './baked-call.ts';
import { journalKeys } from './keys.ts';

/** A value no key builder's fixed text holds. */
const PROBE = '\u0000probe\u0000';
/** A key builder's text after its value. */
const after = (key: string): string => key.slice(key.lastIndexOf(PROBE) + PROBE.length);

/** ARGV positions (0-based) of the end's run id and tenant (finish-run-14's ARGV[1], ARGV[16]). */
const RUN_ID = 0;
const TENANT = 15;

/** KEYS positions (0-based) made from the run id, and their builders' ends. */
const FROM_RUN: readonly [number, string][] = [
  [0, after(keys.run(PROBE))],
  [1, after(keys.runEvents(PROBE))],
  [2, after(journalKeys().journal(PROBE))],
  // finish-run-14's KEYS[14] (round 48): the run's decisions, expired at its end.
  [13, after(journalKeys().decisions(PROBE))],
];
/** KEYS positions made from the tenant (finish-tenant-9's KEYS[1..6], [8]; lease-release-5's KEYS[5]). */
const FROM_TENANT: readonly [number, string][] = [
  [3, after(keys.inFlight(PROBE))],
  [4, after(keys.indexPending(PROBE))],
  [5, after(keys.indexRunSummaries(PROBE))],
  [6, after(keys.indexRunsEnded(PROBE))],
  [7, after(keys.indexSessions(PROBE))],
  [8, after(keys.indexSessionStats(PROBE))],
  [10, after(keys.tenantFeed(PROBE))],
  [18, after(keys.poolTenantLeases('mode', PROBE))],
];

/**
 * The end's derived entries, its arguments being the part named `args` and the job's id carried at
 * `jobId` (a part's name and position).
 */
export function endDerived(
  args: string,
  jobId: readonly [string, number],
): { keys: DerivedEntry[]; args: DerivedEntry[] } {
  return {
    keys: [
      ...FROM_RUN.map(([at, end]) => ({ at, from: [args, RUN_ID] as const, after: end })),
      ...FROM_TENANT.map(([at, end]) => ({ at, from: [args, TENANT] as const, after: end })),
    ],
    args: [
      // The tenant half's run id (finish-tenant-9's ARGV[1]) and the lease's job id (lease-release-5's ARGV[1]).
      { at: 7, from: [args, RUN_ID], after: '', before: '' },
      { at: 18, from: jobId, after: '', before: '' },
    ],
  };
}
