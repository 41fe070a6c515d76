/**
 * What the run store's create and end scripts (run-index-scripts.ts) are called with for their
 * tenant half — the index's keys, a summary's ARGV, a run's end's KEYS/ARGV and the usage day it
 * counts in — and the index's own skill entries (run-index.ts) use the same.
 */

import { keys, TENANT_MEMO_MAX, tenantMemo } from '@islet/core';
import { healthHour } from './health-buckets.ts';
import type { RunSummary } from './run-index.ts';
import { DEFAULT_WRITE_FORMAT, type WriteFormat } from './run-store-types.ts';

/** The keys of a tenant's index (all in its slot). */
export interface RunIndexKeys {
  readonly runs: string;
  readonly summaries: string;
  readonly ended: string;
  readonly sessions: string;
  readonly sessionStats: string;
  readonly feed: string;
  readonly pending: string;
}

/** Tenants whose index keys are kept made; past this the memo forgets its oldest (rebuilt, equal). */
export const RUN_INDEX_KEYS_MEMO_MAX = TENANT_MEMO_MAX;

/**
 * The keys of a tenant's index (all in its slot), made once a tenant (core's `tenantMemo`): a
 * submit and a run's end each asked for them afresh, seven names built from templates a call on
 * both paths (~0.8 KB of the runner's garbage a run, test/bench/README.md round 37 `end-spreads`).
 * Frozen since they are shared; bounded by `RUN_INDEX_KEYS_MEMO_MAX`.
 */
export const runIndexKeys: (tenant: string) => RunIndexKeys = tenantMemo((tenant) =>
  Object.freeze({
    runs: keys.indexRuns(tenant),
    summaries: keys.indexRunSummaries(tenant),
    ended: keys.indexRunsEnded(tenant),
    sessions: keys.indexSessions(tenant),
    sessionStats: keys.indexSessionStats(tenant),
    feed: keys.tenantFeed(tenant),
    pending: keys.indexPending(tenant),
  }),
);

/** A tenant's usage hash of a day (days since the epoch), made once a tenant and day. */
const usageDayKey = tenantMemo((tenant, day) => keys.usageDay(tenant, usageDay(day * DAY_MS)));
/** A tenant's health hash of an hour (`healthHour`), made once a tenant and hour. */
const healthHourKey = tenantMemo((tenant, hour) => keys.healthHour(tenant, hour));

/** Usage counters are kept this long (a day's hash expires this long after the day's end). */
export const USAGE_RETENTION_SECONDS = 400 * 24 * 3600;

const DAY_MS = 24 * 3600 * 1000;
// The last day named and the times it spans: every run's end asks for the day, and all but the
// first end of a day find it here instead of formatting a date.
let lastDay = { from: 0, to: 0, day: '' };

/** The UTC day (`YYYY-MM-DD`) a time falls on: the usage hash a run's end counts in. */
export function usageDay(ms: number): string {
  if (ms >= lastDay.from && ms < lastDay.to) return lastDay.day;
  const day = new Date(ms).toISOString().slice(0, 10);
  // UTC days are exactly DAY_MS long in JavaScript time (no leap seconds).
  const from = Math.floor(ms / DAY_MS) * DAY_MS;
  lastDay = { from, to: from + DAY_MS, day };
  return day;
}

/**
 * ARGV for indexCreateLua (run-index-scripts.ts): the run's summary, its description already sealed
 * (a run's record holds the same sealed text: one seal serves both), and the retention that prunes
 * ended runs. Format 2 (`WriteFormat`): the summary as `#` and an object of the fields the entry
 * does not carry already (its id, session, principal and creation time are the entry's `i`, `s`,
 * `p`, `a`), which includes/index-create.lua puts in the entry as an object (not JSON text inside
 * JSON, each quote escaped), and `now` empty when it equals the creation time (the entry then has
 * no `n`; the fold reads `a`): ~170 bytes of the submit's fsync'd write (test/bench/README.md,
 * round 40 `format-two`).
 */
export function indexCreateArgs(
  tenant: string,
  summary: Omit<RunSummary, 'endedAt' | 'kind'>,
  retentionSeconds: number,
  now = Date.now(),
  format: WriteFormat = DEFAULT_WRITE_FORMAT,
): string[] {
  const lean = format === '2';
  return [
    summary.id,
    String(summary.createdAt),
    lean ? `#${leanSummary(summary)}` : JSON.stringify(summary),
    summary.sessionId,
    summary.principal ?? '',
    lean && now === summary.createdAt ? '' : String(now),
    String(retentionSeconds * 1000),
    tenant,
  ];
}

/**
 * A summary's JSON without the fields its create entry carries (includes/index-fold.lua puts them
 * back): the id, the session and the creation time always, the principal when it has one (an entry's
 * `p` '' reads as none). A creation time that is not a whole number of ms stays (the fold's Lua
 * writes numbers with 14 digits).
 */
function leanSummary(summary: Omit<RunSummary, 'endedAt' | 'kind'>): string {
  const { id: _id, sessionId: _session, principal, createdAt, ...rest } = summary;
  const out: Record<string, unknown> = rest;
  if (principal === '') out.principal = principal;
  if (!Number.isSafeInteger(createdAt) || createdAt >= 1e14) out.createdAt = createdAt;
  return JSON.stringify(out);
}

/** What a run's end adds to its tenant's usage besides its status and wall time. */
export interface RunUsage {
  outputBytes?: number;
  bindingCalls?: number;
  cpuMs?: number;
}

/**
 * KEYS and ARGV of FINISH_TENANT for a run of `tenant` ending at `endedAt`: `inFlightKey` is the
 * set it leaves.
 */
export function finishTenantCall(
  tenant: string,
  inFlightKey: string,
  end: { id: string; status: string; endedAt: number; kind?: string; usage?: RunUsage },
  format: WriteFormat = DEFAULT_WRITE_FORMAT,
) {
  const k = runIndexKeys(tenant);
  const u = end.usage ?? {};
  return {
    keys: [
      inFlightKey,
      k.pending,
      k.summaries,
      k.ended,
      k.sessions,
      k.sessionStats,
      usageDayKey(tenant, Math.floor(end.endedAt / DAY_MS)),
      k.feed,
      healthHourKey(tenant, healthHour(end.endedAt)),
    ],
    args: [
      end.id,
      end.status,
      String(end.endedAt),
      // Format 2: '' for a Completed run's `none` (run-store-args.ts `storedKind`), which the
      // entry then leaves out (includes/finish-tenant.lua).
      format === '2' && end.status === 'Completed' && end.kind === 'none' ? '' : (end.kind ?? ''),
      String(Math.round(u.outputBytes ?? 0)),
      String(Math.round(u.bindingCalls ?? 0)),
      String(Math.round(u.cpuMs ?? 0)),
      // Format 2: empty, and the end's entry then names neither its usage day, nor its health hour,
      // nor this expiry: the fold derives all three from its end time (includes/index-fold.lua),
      // ~85 bytes of the end's fsync'd write (test/bench/README.md, round 40 `format-two`). The
      // keys stay declared (a Cluster's slot check; the same slot).
      format === '2' ? '' : String((Math.floor(end.endedAt / DAY_MS) + 1) * 86_400 + USAGE_RETENTION_SECONDS),
      tenant,
    ],
  };
}
