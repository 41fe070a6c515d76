/**
 * What the run store's scripts (run-store-scripts.ts) are called with: a new run's record fields
 * and index summary, its admission's KEYS and ARGV and the admission's answer, an end's fields.
 * Pure: run-store.ts keeps the order of the calls.
 */
import { keys, type Sealer, tenantMemo } from '@islet/core';
import type { RunResult } from '@islet/protocol';
import type { RunSummary } from './run-index.ts';
import {
  type Admission,
  type CreateAdmission,
  DEFAULT_WRITE_FORMAT,
  type RunTimings,
  type StoredRun,
  type WriteFormat,
} from './run-store-types.ts';
import { timingsText } from './run-timings.ts';
import { sealEnded, sealPick } from './sealed-fields.ts';
import { textRefOf } from './stored-text.ts';

type Seal = (v: unknown) => string;

/**
 * A new run's record (its hash fields); `description` is already sealed (the summary's too). Format
 * 2 seals the program and its request as one field, `pick` (sealed-fields.ts), in `code`'s place.
 */
export function recordFields(
  run: StoredRun,
  sealer: Sealer,
  seal: Seal,
  description: string,
  format: WriteFormat = DEFAULT_WRITE_FORMAT,
): Record<string, string> {
  const two = format === '2';
  const fields: Record<string, string> = {
    id: run.id,
    tenant: run.tenant,
    session: run.session,
    turn: run.turn,
    callId: run.callId,
    status: run.status,
    mode: run.mode,
  };
  // The same fields in the same order as before in format 1 (what the previous release writes).
  if (two) fields.pick = sealPick(sealer, run.id, run.code, run.request);
  else fields.code = sealer.seal(run.code);
  fields.description = description;
  if (!two) fields.request = seal(run.request);
  fields.createdAt = String(run.createdAt);
  fields.updatedAt = String(run.updatedAt);
  // Written at 0 although every reader reads its absence as 0: a create over a record of the
  // same id (tests reuse ids) must reset it (test/bench/README.md, round 36, `aof-trim`).
  fields.attempts = String(run.attempts);
  // The engine's clock for the run: the submit's `now`, which is its `createdAt` (gateway
  // run-build.ts). Format 2 leaves it out then, as every reader since round 40 reads an absent
  // clock as `createdAt` (run-reads.ts `fromHash`): a replayed attempt's clock stays the same.
  // ~33 bytes of the submit's fsync'd write (test/bench/README.md, round 40 `format-two`).
  if (!two || run.clockMs !== run.createdAt) fields.clockMs = String(run.clockMs);
  // A run's seed is its id (gateway run-build.ts): the field is written only when it differs, as
  // every reader since the first release reads an absent seed as the id (run-reads.ts `fromHash`).
  // 53 bytes out of the submit's fsync'd write (test/bench/README.md, round 36, `aof-trim`).
  if (run.seed !== run.id) fields.seed = run.seed;
  if (run.principal) fields.principal = run.principal;
  if (run.pushEnd) fields.pushEnd = '1';
  return fields;
}

/** A new run's summary in its tenant's index (run-index.ts). */
export function summaryOf(run: StoredRun, description: string): Omit<RunSummary, 'endedAt' | 'kind'> {
  return {
    id: run.id,
    status: run.status,
    description,
    sessionId: run.session,
    ...(run.principal ? { principal: run.principal } : {}),
    style: run.request.style ?? 'run_code',
    mode: run.mode,
    createdAt: run.createdAt,
  };
}

/**
 * A tenant's names a submit's admission and a run's end send beside its index's (all in its slot),
 * made once a tenant (core's `tenantMemo`), frozen since they are shared.
 */
export const tenantNames = tenantMemo((tenant) =>
  Object.freeze({
    inFlight: keys.inFlight(tenant),
    skillsInFlight: keys.skillsInFlight(tenant),
    /** The admission's idempotency key without an Idempotency-Key (never read then). */
    noIdempotency: keys.idempotency(tenant, ''),
    /** The admission's rate window without a rate count (never touched then). */
    noRate: keys.rateWindow(tenant, 0),
  }),
);

/**
 * KEYS and ARGV of a create's admission (ADMIT_TENANT, the first half of ADMIT_AND_CREATE); no
 * ARGV without an admission. `usageKeys`: the tenant's stored-bytes counters (the last is `charge`'s).
 */
export function admitCall(
  run: StoredRun,
  admission: CreateAdmission | undefined,
  x: {
    tenantKeys: string[];
    indexKeys: string[];
    indexArgs: string[];
    charge: { key: string; args: (string | number)[] };
    usageKeys: readonly string[];
  },
): { admitKeys: string[]; admitArgs: (string | number)[] | undefined } {
  const storageLimit = admission?.storage?.limitBytes ?? Number.POSITIVE_INFINITY;
  // `concat`, not spreads (each a walk through the iterator protocol in unoptimized code, on every
  // submit's path; round 37 `submit-gw`).
  const names = tenantNames(run.tenant);
  const admitKeys = x.tenantKeys.concat(
    names.skillsInFlight,
    keys.sessionOwner(run.tenant, run.session),
    // Not read without an Idempotency-Key (a name in the tenant's slot all the same).
    admission?.idempotencyKey ?? names.noIdempotency,
    // Not touched without a rate count (ditto).
    admission?.rate?.key ?? names.noRate,
    x.indexKeys,
    x.charge.key,
    // Not read without a share to check (ditto).
    x.usageKeys.slice(0, -1),
  );
  const admitArgs =
    admission &&
    (
      [
        run.id,
        run.createdAt,
        admission.maxInFlight,
        run.principal ?? '',
        admission.sessionTtlSeconds,
        Date.now(),
        admission.idempotencyKey ? '1' : '0',
        admission.rate ? admission.rate.limit : '',
      ] as (string | number)[]
    ).concat(x.indexArgs, x.charge.args, Number.isFinite(storageLimit) ? storageLimit : '');
  return { admitKeys, admitArgs };
}

/** The admission script's answer; 'over-storage <bytes>' leaves the bytes with the caller. */
export function admissionAnswer(answer: unknown, admission: CreateAdmission | undefined): Admission {
  const text = String(answer);
  if (!text.startsWith('over-storage ')) return text as Admission;
  if (admission?.storage) admission.storage.usedBytes = Number(text.slice('over-storage '.length));
  return 'over-storage';
}

/**
 * The failure kind an end stores in its record and its tenant's end entry ('' = none stored).
 * Format 2 leaves a Completed run's `none` out, its only kind: 20 B of the record's HSET (`kind
 * none`) and 11 B of the entry (`"k":"none"`) of every Completed run's fsync'd end. Every reader
 * since d92635a (round 41 `format-default`) reads it absent as `none` (run-reads.ts `openEnd`,
 * includes/index-fold.lua, includes/finish-run.lua); a release before it does not (e807b91's fold
 * lists such a run without `kind`), so format 1, the setting for a roll from a release before
 * d92635a, still writes it (test/bench/README.md round 42 `format-next`).
 */
export function storedKind(status: string, kind: string | undefined, format: WriteFormat): string {
  const k = kind ?? 'none';
  return format === '2' && k === 'none' && status === 'Completed' ? '' : k;
}

/**
 * An end's record fields (the final status, the sealed result and text). Format 2 seals the result
 * and the text as one field, `ended` (sealed-fields.ts: a Completed run's text left out), in
 * `result`'s place.
 */
export function endFields(
  run: { id: string },
  end: {
    status: string;
    result: RunResult;
    text: string;
    textIsResult?: boolean;
    kind?: string;
    timings?: RunTimings;
  },
  sealer: Sealer,
  seal: Seal,
  format: WriteFormat = DEFAULT_WRITE_FORMAT,
): Record<string, string> {
  if (format === '2') {
    const fields: Record<string, string> = {
      status: end.status,
      ended: sealEnded(sealer, run.id, end),
    };
    const kind = storedKind(end.status, end.kind, format);
    if (kind) fields.kind = kind;
    if (end.timings) fields.timings = timingsText(end.timings);
    return fields;
  }
  const fields: Record<string, string> = {
    status: end.status,
    result: seal(end.result),
    kind: end.kind ?? 'none',
  };
  // The output once: the text's copy of the printed lines becomes a reference (stored-text.ts).
  const ref = textRefOf(end.text, end.result);
  if (ref) fields.textRef = seal(ref);
  else fields.text = sealer.seal(end.text);
  // Rides in the same script call as the end: stage timings cost no extra round trip. Compact
  // (run-timings.ts): only the benches read them.
  if (end.timings) fields.timings = timingsText(end.timings);
  return fields;
}

/**
 * The end script's push argument (includes/finish-run.lua's ARGV[7]): '0' no waiter pushed to; '1'
 * pushed; '2' pushed, the end's caller sent no call in its attempt (`sentNoCall`); format 2's '3' and
 * '4' the same, its journal pushed as `end3` where includes/transition.lua may (read by every
 * gateway since a0565cd2; format 1, the setting for a roll from an older release, pushes `end2`);
 * '5' not pushed, no call sent (round 46: the end sends no EXPIRE for a journal that does not exist).
 */
export function pushArg(
  pushEnd: boolean | undefined,
  sentNoCall: boolean | undefined,
  format: WriteFormat,
): string {
  if (!pushEnd) return sentNoCall ? '5' : '0';
  if (format === '2') return sentNoCall ? '4' : '3';
  return sentNoCall ? '2' : '1';
}

/**
 * The end's mode argument (ARGV[7]): `pushArg`'s digit, then a `d` unless the caller ruled out that
 * the run has decisions (`noDecisions`, round 48): only an end with the `d` expires the run's
 * decisions hash (includes/finish-run.lua), so a run that cannot have asked (the runner's first
 * plain attempt that sent no call and asked no wider access) sends no EXPIRE for a key that does
 * not exist. Without the caller's word the `d` goes: a missed case would only leave the request's
 * own expiry (its wait plus a retention), never lose data.
 */
export function endModeArg(push: string, noDecisions: boolean | undefined): string {
  return noDecisions ? push : `${push}d`;
}
