/**
 * The call journal's public contract (agreed in helpers/INTERFACES.md). The gateway journals
 * every binding call by (run, index) before the program sees its outcome; the runner reads the
 * journal to replay a run from the top.
 */
import type { BindingOutcome } from '@islet/protocol';
import type { FetchedStart, FetchedStartTerms } from './fetched-start-args.ts';
import type { LeaseAnswer, LeaseTerms, RunLease } from './lease-scripts.ts';

/** Seals text at rest (AES-256-GCM in `@islet/core`); injected so the journal holds no keys. */
export interface Sealer {
  seal(plaintext: string, bind?: string): string;
  open(sealed: string, bind?: string): string;
}

/** Where a binding comes from, as the code-run record's `calls[].source` shows it. */
export interface CallSource {
  connectionId: string;
  connectionName: string;
  name: string;
  kind: 'tool' | 'resource' | 'prompt';
}

export type ClaimResult =
  /** First time (or an earlier attempt claimed it but never sent it): the caller may check policy and send it. */
  | { kind: 'new'; token?: string }
  /** Journaled: return the saved outcome, never resend. */
  | { kind: 'done'; outcome: BindingOutcome; deliverySeq: number }
  /** The same attempt is already handling it (a duplicate delivery): wait for its outcome. */
  | { kind: 'in-flight' }
  /** Sent by an earlier attempt, no outcome journaled: report AppCallFailed, never resend. */
  | { kind: 'unknown' }
  /** The program diverged from its journal: ReplayMismatch, nothing sent. */
  | { kind: 'mismatch'; expected: { binding: string } }
  /**
   * A newer attempt of this run has started (see `nextAttempt`): this execution is a zombie
   * (e.g. a stalled job another runner took over) and must stop; nothing was claimed.
   */
  | { kind: 'superseded' };

export interface ClaimCall {
  index: number;
  binding: string;
  argsJson: string;
  source?: CallSource;
  /**
   * The handler that held this call for the same attempt is known to be gone (e.g. the runner's
   * request to a gateway failed with a connection error and is being retried on another one).
   * A `pending` entry of the same attempt is then taken over (`new`), a `sent` one is `unknown`.
   * Without it a same-attempt claim answers `in-flight`.
   */
  takeover?: boolean;
  /**
   * The caller sends the call as soon as it is claimed (nothing to ask first): a `new` claim is
   * journaled as `sent` in the same step, with no separate `markSent`.
   */
  sendNow?: boolean;
  /** The call's `operationIdFor(runId, index)` when the caller has it already (one SHA-1 a call, not two). */
  operationId?: string;
}

/**
 * An event appended to the run's event stream by `complete` when, and only when, it stores the
 * outcome: the stream key must share the journal's hash slot (`{<runId>}`).
 */
export interface CompletionEvent {
  streamKey: string;
  /** Approximate MAXLEN of the stream. */
  maxLen: number;
  type: string;
  /** The event's sealed data; `''` in a `call` event's one-seal form (`ms` set). */
  sealedData: string;
  /**
   * A `call` event's one-seal form (ISLET_CALL_ONE_SEAL): its duration, ms; the script stores the
   * call's index `i` and this `ms` in place of `data` (call-event-reads.ts reads it).
   */
  ms?: number;
  /** Published after the append, with `message`. */
  channel: string;
  message: string;
}

export type JournalState = 'pending' | 'sent' | 'done';

/** A journaled call as a run's record shows it: everything but its arguments (left sealed, unread). */
export type JournalCallView = Omit<JournalEntry, 'argsJson'>;

export interface JournalEntry {
  index: number;
  binding: string;
  argsJson: string;
  source?: CallSource;
  /** Deterministic per (run, index): the same on every replay and every gateway. */
  operationId: string;
  state: JournalState;
  outcome?: BindingOutcome;
  /** 1-based order in which outcomes were journaled within the run; replay delivers in this order. */
  deliverySeq?: number;
  /** The attempt that last claimed the call. */
  attempt: number;
  startedAtMs: number;
  settledAtMs?: number;
}

export interface CallJournal {
  claim(runId: string, attempt: number, call: ClaimCall): Promise<ClaimResult>;
  /**
   * Immediately before the App call leaves: from now on a crash makes the outcome `unknown`.
   * With the `token` of the `new` claim it is a compare-and-set: it throws `JournalConflictError`
   * when another handler took the call over meanwhile, and the caller must not send.
   */
  markSent(runId: string, index: number, token?: string): Promise<void>;
  /**
   * Journals the outcome once. A second `complete` of the same call keeps the first outcome and
   * answers its `deliverySeq` with `stored: false`. `outcomeJson`: `JSON.stringify(outcome)` when
   * the caller has it already (it is what gets sealed).
   */
  complete(
    runId: string,
    index: number,
    outcome: BindingOutcome,
    event?: CompletionEvent,
    outcomeJson?: string,
  ): Promise<{ deliverySeq: number; stored: boolean }>;
  /** Every journaled call of the run, by index. */
  list(runId: string): Promise<JournalEntry[]>;
  /**
   * `list` without the arguments, which stay sealed: a run's record shows no arguments, and
   * opening them (up to the output cap each) for every read of a large run is work for nothing.
   */
  listCalls(runId: string): Promise<JournalCallView[]>;
  /** `listCalls`' entries from the journal hash's fields as read elsewhere (a run's pushed end). */
  callsOf(hash: Record<string, string>): JournalCallView[];
  /**
   * The calls of a pushed end's journal (its flat `[field, value, …]` as parsed with the push): a
   * call entry's or source's value its JSON text (`end2`) or that JSON parsed (`end3`, the next
   * release's push).
   */
  callsOfPushed(flat: unknown): JournalCallView[];
  /** One call's entry, or undefined. */
  get(runId: string, index: number): Promise<JournalEntry | undefined>;
  /**
   * Allocates the next attempt number of a run (1, 2, …) from the journal alone, for callers with no
   * run record (tests and tools driving calls by hand). An execution's start uses `beginAttempt`,
   * which also reads the record's `attempts`: since a first start writes no journal, this counter
   * does not see a run begun that way.
   */
  nextAttempt(runId: string): Promise<number>;
  /**
   * An execution's start in one script (one round trip instead of three): reads the run's record
   * (`runKey`, in the run's slot), and unless it is missing, ended or asked to cancel, allocates
   * the next attempt (as `nextAttempt`) and counts it in the record's `attempts`. Answers the
   * record's fields as read, the attempt (undefined when none was started) and the journal.
   * With `start` (the run's event stream and its `Running` status event), a started attempt also
   * marks the record Running and appends that event with the attempt number in a plain `attempt`
   * field, then publishes: the attempt's start costs no second round trip.
   *
   * With `lease` (one server only; needs `start`), the run's slot lease in its pool is decided
   * first in the same script (lease-and-begin-9): refused, nothing of the run is read or written
   * (the record comes back empty, no attempt); granted, the attempt begins as above.
   */
  beginAttempt(
    runId: string,
    runKey: string,
    start?: CompletionEvent,
    lease?: LeaseTerms | RunLease,
  ): Promise<BegunAttempt>;
  /**
   * `beginAttempt`'s answer for a lease whose fetch began the attempt (`begun`), in the caller's
   * turn (taken from the lease once, as `beginAttempt` takes it); undefined for any other lease.
   */
  fetchedAttempt(lease: LeaseTerms | RunLease): BegunAttempt | undefined;
  /**
   * What a worker's fetch adds to BullMQ's arguments so that the same script also takes the job's
   * lease and begins its run's attempt (`fetch-lease-begin-11`, one server only; `startArgsList`
   * makes the arguments, a baked call carries the time alone); the lease's `begun` then carries its
   * answer to `beginAttempt`, which runs no script of its own.
   */
  fetchedStart(terms: Omit<FetchedStartTerms, 'journalKey' | 'ttlSeconds' | 'nowMs'>): FetchedStart;
  /** Polls until the call is `done` (for `in-flight` duplicates); undefined when `timeoutMs` passes first. */
  waitForOutcome(
    runId: string,
    index: number,
    options?: { timeoutMs?: number; pollMs?: number },
  ): Promise<{ outcome: BindingOutcome; deliverySeq: number } | undefined>;
  /** Removes the run's journal (with its record). */
  remove(runId: string): Promise<void>;
}

/** What `beginAttempt` found and did. */
export interface BegunAttempt {
  /**
   * The run record's fields and values in turn as read before the attempt was counted (HGETALL's
   * flat answer, as the script gave it; empty: no record): the run store's `fromFields` reads it.
   */
  runFields: readonly unknown[];
  /** The attempt started; undefined when the run was missing, ended or asked to cancel. */
  attempt: number | undefined;
  /** Every journaled call of the run, by index (empty when no attempt started). */
  entries: JournalEntry[];
  /** The lease's answer, when one was asked for. */
  lease?: LeaseAnswer;
}
