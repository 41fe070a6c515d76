/**
 * The run store's types (run-store.ts): a stored run, what its submit is admitted with, its limits,
 * bindings and stage timings. Kept apart so the store's file holds its methods.
 */

import type { Sealer } from '@islet/core';
import type { RunResult, RunStatus, SandboxMode, TimeBudget } from '@islet/protocol';

/**
 * What a create with an admission answers: stored, or refused because the tenant's retained data
 * holds its share of storage (checked first, see AdmissionStorage), the request passed the
 * tenant's rate limit (counted at admission), the session is another principal's, the tenant is at
 * its in-flight quota, or its Idempotency-Key was taken over.
 */
export type Admission =
  | 'created'
  | 'over-storage'
  | 'rate-limited'
  | 'session-taken'
  | 'over-quota'
  | 'superseded';

/**
 * A request's count against its tenant's per-minute rate limit, made in the admission's own step
 * (no round trip, and no Redis write of its own to wait for, before the submit). The store sets
 * `counted` once the count is on its way; a request that never got that far is counted by its
 * caller (auth.ts).
 */
export interface AdmissionRateCount {
  /** The window's counter (keys.rateWindow: the tenant's slot). */
  key: string;
  /** Requests allowed in the window; the one past it is refused ('rate-limited'). */
  limit: number;
  counted: boolean;
  /** Set by the caller when the admission answered 'rate-limited'. */
  refused?: boolean;
}

/**
 * The tenant's share of Redis bytes (the gateway's storage-quota.ts), checked by the admission's
 * own step against the tenant's stored-bytes counters (tenant-bytes-store.ts): no read of its own
 * before the submit. A tenant holding its share is refused ('over-storage') before any other
 * check, its request still counted against its rate limit; the store sets `usedBytes` then.
 */
export interface AdmissionStorage {
  /** Bytes the tenant may hold (Infinity: no share, nothing read). */
  limitBytes: number;
  /** Set by the store when the admission answered 'over-storage': the bytes the tenant holds. */
  usedBytes?: number;
}

/** What `create` checks and counts in the tenant half of a new run (see RunStore `create`). */
export interface CreateAdmission {
  maxInFlight: number;
  sessionTtlSeconds: number;
  /** The submit's Idempotency-Key (its Redis key): admitted only while it names this run. */
  idempotencyKey?: string;
  /** Count the request against its tenant's rate limit here (see AdmissionRateCount). */
  rate?: AdmissionRateCount;
  /** Bytes the record stores, counted in its tenant's stored bytes when admitted. */
  storedBytes?: number;
  /** Refuse a tenant holding its share of storage (see AdmissionStorage). */
  storage?: AdmissionStorage;
  /**
   * The run's job goes on its mode's queue with the create and counts in the pool's queued counts
   * (fair share on, pool-demand.ts): on one server the admission's script counts it, and `create`
   * tells its `then` so (no HINCRBY of its own before the add).
   */
  countQueued?: boolean;
  /**
   * `create`'s `then` takes a ride (admitted-add.ts `AdmissionRide`) and sends the job with the
   * admission in one script, or the admission alone before its add (one server, as `then` goes).
   */
  carriesAdd?: boolean;
  /**
   * A check the caller started (a read): awaited once the record is sealed and its
   * arguments built, before anything is sent, so its round trip overlaps that work. A
   * rejection is thrown with nothing written or counted.
   */
  ready?: Promise<unknown>;
}

/** A binding a run may call, resolved at submit from the run's connections. */
export interface BindingSpec {
  /** `slug.capability`, as the engine takes it (`apps.slug.capability` in the program). */
  binding: string;
  connectionId: string;
  connectionName: string;
  /** The tool, resource or prompt name as the connection declares it. */
  name: string;
  kind: 'tool' | 'resource' | 'prompt';
}

/**
 * The limits a run executes under, fixed when it is accepted: every execution and replay of the
 * run uses these, whatever the platform settings say later.
 */
export interface RunLimitsSnapshot {
  /** `null`: no deadline (a workflow principal asked for none). */
  timeoutMs: number | null;
  memoryMb: number;
  outputBytes: number;
  /** `shared` (run_code: lines and value share the cap) or `separate` (Code Mode `outputBytes`). */
  outputCap: 'shared' | 'separate';
  /** The platform settings version the limits were taken from (`code-mode` runs). */
  settingsVersion?: number;
}

export interface RunRequestData {
  /** Which contract the run follows: `run_code` (document 000) or `code-mode` (document 003). */
  style?: 'run_code' | 'code-mode';
  /** Absent on runs accepted before limits were snapshotted (the runner reads the settings then). */
  limits?: RunLimitsSnapshot;
  timeoutMs?: number;
  connections: string[];
  bindings: BindingSpec[];
  sandboxPermissions?: SandboxMode;
  justification?: string;
  /** How an `ask` waits (helper-5, resolved at submit from request and tenant run policy). */
  approval?: 'hold' | 'stop';
  /** Whether waiting for binding calls counts against the budget (resolved at submit). */
  timeBudget?: TimeBudget;
  /** API key id that submitted the run (for the four-eyes rule). */
  submittedBy?: string;
  /** The tenant's four-eyes rule was on at submit: `submittedBy` cannot approve this run. */
  fourEyes?: boolean;
}

export interface StoredRun {
  id: string;
  tenant: string;
  session: string;
  turn: string;
  callId: string;
  /** The principal (owner of the API key) that submitted the run; absent on older runs. */
  principal?: string;
  status: RunStatus;
  mode: SandboxMode;
  code: string;
  description: string;
  request: RunRequestData;
  result?: RunResult;
  text?: string;
  kind?: string;
  createdAt: number;
  updatedAt: number;
  /** Times a runner started executing it (1 on the first execution). */
  attempts: number;
  cancelRequested: boolean;
  /** Fixed `Date.now()` and `Math.random()` seed, the same in every execution of the run. */
  clockMs: number;
  seed: string;
  /**
   * The submit's caller waits for the end (`Prefer: wait`, an MCP run): the final transition
   * publishes the record and journal with its end message (TRANSITION), so the gateway holding
   * that request answers without reading them back.
   */
  pushEnd?: boolean;
}

/**
 * When a runner's execution passed each stage, ms since epoch with sub-ms precision
 * (core's `wallNow`, comparable between processes). Stored unsealed beside the end (no program data
 * in it) for `npm run bench`'s per-stage breakdown; nothing else reads it.
 */
export interface RunTimings {
  enqueued: number;
  /** The runner's worker handed the job to its processor (BullMQ's add, wake-up and fetch done). */
  fetched?: number;
  /** The job holds its slot and its fair-share lease: the run's own work starts. */
  pickedUp: number;
  /** Run read, settings read, attempt counted, status Running written: the engine is called. */
  engineCalled: number;
  /** The engine returned (a sandbox host acquired, the isolate made ready, the program ran). */
  engineReturned: number;
  /** Engine time spent waiting for a sandbox host process, ms. */
  hostWaitMs?: number;
  /** The end's script is about to be sent (`updatedAt` is the same moment in whole ms). */
  endSent?: number;
}

export interface RunEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

export interface RunStoreOptions {
  /** Events kept per run stream (approximate trim). Default `DEFAULT_MAX_EVENTS_PER_RUN` (2000). */
  maxEventsPerRun?: number;
  /** Lifetime of a finished run's record and events. Default 7 days. */
  retentionSeconds?: number;
  /**
   * Seals the events a run's calls add (`appendEvent`, `callEvent`); default the store's own
   * sealer. The gateway's store seals through its own-seal memo, which is there for the submit's
   * fields its waiter opens moments later; a call's events are opened only by a stream reader, and
   * a hundred-call run's hundred would push other runs' submit entries out of it.
   */
  eventSealer?: Sealer;
  /**
   * Seals and opens a run's end (`ended`; format 1's `result`, `text`, `textRef`); default the
   * store's own sealer. The gateway's is its plain sealer, past its own-seal memo: an end is
   * sealed by the runner that ran it (or the gateway that cancelled it, rarely opened after), so
   * the memo never held the waiter's pushed end and each open paid a miss — its key built (the
   * sealed text and bind joined, flattened, hashed) and two Map lookups — in the turn between the
   * push and the response (test/bench/README.md, round 49 `end-hop`).
   */
  endSealer?: Sealer;
  /**
   * Core config `ISLET_CALL_ONE_SEAL` (the processes' default on since round 45; this option's, for
   * a store made without it, off): a binding call's `call` event written as its call's index and
   * duration, its data read from the journal (call-event-reads.ts); both forms are read whatever
   * it says.
   */
  callOneSeal?: boolean;
  /**
   * The stored formats written (core config `ISLET_WRITE_FORMAT`; `DEFAULT_WRITE_FORMAT`, `'2'`, when
   * not given): `'1'` writes what releases before e807b91 read; `'2'` the leaner record (the program sealed with its request and the
   * result with its text as one field each: sealed-fields.ts), pending-list entries and job data of
   * this release (run-store-args.ts `recordFields`, run-index-writes.ts). Every reader reads both,
   * whatever it is.
   */
  writeFormat?: WriteFormat;
  /**
   * Whether an end given stage stamps (`timings`) stores them (default true: what is given is
   * written). The runner passes core config `ISLET_RUN_STAGE_TIMINGS` (default off): only benches
   * read them.
   */
  stageTimings?: boolean;
}

/**
 * Which stored formats a process writes (core config `ISLET_WRITE_FORMAT`). `'2'`: a record without
 * `clockMs` when it equals `createdAt`, a create's pending entry with its summary as an object of
 * the fields the entry does not already carry and without `n` when it equals `a`, an end's without
 * the usage and health keys and the usage day's expiry (the fold derives them from `e`).
 */
export type WriteFormat = '1' | '2';

/**
 * What a store, journal or queue given no `writeFormat` writes: core config's default for
 * `ISLET_WRITE_FORMAT` (`2` since the release after e807b91, which reads it), so a test or bench
 * that builds one without the setting writes what users get.
 */
export const DEFAULT_WRITE_FORMAT: WriteFormat = '2';
