/**
 * The arguments `fetch-lease-begin-11` (lease-scripts.ts `fetchLeaseBeginScript`,
 * `endCompleteStartScript`) takes after BullMQ's: the run's lease and attempt start, made on every
 * fetch and every completion that fetches, all the same but the time (made once a worker's terms,
 * then copied). Apart from the scripts that read them so lease-scripts.ts stays under ~400 lines.
 */
import { keys } from '@islet/core';
import type { LeaseTerms } from './lease-scripts.ts';
import type { CompletionEvent } from './types.ts';

/** Arguments `fetch-lease-begin-11` takes after BullMQ's. */
export const FETCHED_ARGS = 24;

/** What a fetch's lease and attempt start need beside the job (all known before the fetch). */
export interface FetchedStartTerms extends Omit<LeaseTerms, 'tenant' | 'jobId'> {
  journalKey: (runId: string) => string;
  /** The run's record key. */
  runKey: (runId: string) => string;
  /** The attempt's start event of a run (the run store's `attemptStartEvent`). */
  start: (runId: string) => CompletionEvent;
  /** The journal's expiry, seconds. */
  ttlSeconds: number;
  nowMs: number;
}

/** A key's text before and after the tenant or run id in it. */
function around(make: (id: string) => string): [string, string] {
  const marker = '\u0000';
  const [before, after, ...rest] = make(marker).split(marker);
  if (after === undefined || rest.length > 0) throw new Error(`a key must hold its id once: ${make(marker)}`);
  return [before ?? '', after];
}

/** The attempt's wake-up message is the run id and a fixed text after it. */
function wakeUpAfterRunId(start: FetchedStartTerms['start']): string {
  const [before, after] = around((runId) => start(runId).message);
  if (before !== '') throw new Error('an attempt start wake-up must begin with its run id');
  return after;
}

/**
 * A worker's start arguments but the time (the last), made once per its start maker, key makers
 * and terms: the same object at every fetch of a worker, so a baked call (baked-call.ts) finds its
 * variant by it, without comparing the names it holds.
 */
export interface FixedStart {
  readonly args: readonly (string | number)[];
}

/** A fetch's start: the worker's fixed arguments and the fetch's time. */
export interface FetchedStart {
  fixed: FixedStart;
  nowMs: number;
}

interface MadeStart extends FixedStart {
  journalKey: FetchedStartTerms['journalKey'];
  runKey: FetchedStartTerms['runKey'];
}

/** A worker's fixed start arguments, by its start event's maker and its terms. */
const startArgsMade = new WeakMap<FetchedStartTerms['start'], Map<string, MadeStart>>();

/**
 * `fetch-lease-begin-11`'s arguments after BullMQ's (its header names them) as a fetch's start.
 * Made on every fetch and every completion that fetches (the end's path, before its call is
 * written), they are all the same but the time: the rest is made once per start maker, key makers
 * and terms, and kept (the makers give the same text for the same id: the run store seals each
 * status once).
 */
export function fetchedStart(t: FetchedStartTerms): FetchedStart {
  let made = startArgsMade.get(t.start);
  if (!made) {
    made = new Map();
    startArgsMade.set(t.start, made);
  }
  const terms = `${t.mode}\u0000${t.share}\u0000${t.cap}\u0000${t.leaseMs}\u0000${t.ttlSeconds}`;
  let fixed = made.get(terms);
  if (!fixed || fixed.journalKey !== t.journalKey || fixed.runKey !== t.runKey) {
    fixed = { journalKey: t.journalKey, runKey: t.runKey, args: startArgsOf(t).slice(0, -1) };
    made.set(terms, fixed);
  }
  return { fixed, nowMs: t.nowMs };
}

/** A fetch's start as the unbaked scripts take it: all 24 arguments, the time last. */
export function startArgsList(start: FetchedStart): (string | number)[] {
  const args = start.fixed.args.slice();
  args.push(start.nowMs);
  return args;
}

/** `fetch-lease-begin-11`'s arguments after BullMQ's, the time last (`startArgsList` of `fetchedStart`). */
export function fetchedStartArgs(t: FetchedStartTerms): (string | number)[] {
  return startArgsList(fetchedStart(t));
}

/** All of them, the time last (handoff-terms.ts reads their names). */
export function startArgsOf(t: FetchedStartTerms): (string | number)[] {
  const start = t.start('\u0000');
  const args: (string | number)[] = [
    keys.poolSlots(t.mode),
    keys.poolBusy(t.mode),
    keys.poolQueued(t.mode),
    keys.poolWaiting(t.mode),
    ...around((tenant) => keys.poolTenantLeases(t.mode, tenant)),
    ...around((tenant) => keys.poolTenantDeferred(t.mode, tenant)),
    ...around(t.journalKey),
    ...around(t.runKey),
    ...around((runId) => t.start(runId).streamKey),
    t.share,
    t.cap,
    t.leaseMs,
    t.ttlSeconds,
    start.maxLen,
    start.type,
    start.sealedData,
    start.channel,
    wakeUpAfterRunId(t.start),
    t.nowMs,
  ];
  if (args.length !== FETCHED_ARGS) throw new Error('fetch-lease-begin-11: argument count');
  return args;
}
