/**
 * A run read back, and its event stream apart from its transitions: a record's fields decoded
 * (fromHash), the record and status reads, the events read and appended, and the events the
 * journal's scripts append (a binding call's, an attempt's start). Composed into the run store
 * (run-store.ts), which hands over the sealing it shares: one status seal cache per store. The
 * reading of a flat answer's fields by name into one fixed-shape object (`readFields`,
 * `ReadFields`) moved to record-read-fields.ts.
 */

import { channels, keys, type Sealer } from '@islet/core';
import type { RunResult, RunStatus, SandboxMode } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { durationMsSince } from './call-event.ts';
import { type CallEventRef, callEventsFromJournal } from './call-event-reads.ts';
import { readFields } from './record-read-fields.ts';
import type { RunEvent, RunRequestData, StoredRun } from './run-store-types.ts';
import { openEnded, openPick } from './sealed-fields.ts';
import { type TextRef, textFromRef } from './stored-text.ts';
import type { CompletionEvent } from './types.ts';

/**
 * How a read run's sealed description is given: opened now (true), opened at its first read
 * (false, an accessor), or not at all (`'unread'`: `''`, for a caller that never reads it).
 */
export type DescriptionRead = boolean | 'unread';

/**
 * What the reader already holds of the run it reads, exactly as stored: the program, request and
 * description a gateway sealed at its submit (or read). A waiter answering the run's pushed end
 * takes them from here instead of opening its own seals again (`pick`'s parse, or `code`'s and
 * `request`'s memo hits and parse): round 40 `end-turn`, ~30 µs of the gateway's turn on the end.
 */
export type KnownRun = Pick<StoredRun, 'id' | 'code' | 'request' | 'description'>;

/**
 * The record's fields a lean pushed end carries (`<id> end2`, includes/transition.lua's END_FIELDS,
 * the same names): those a run's execution and end write. Every other field is its submit's.
 */
export const END_PUSH_FIELDS: readonly string[] = [
  'id',
  'status',
  'updatedAt',
  'attempts',
  'cancelRequested',
  'kind',
  'ended',
  'result',
  'text',
  'textRef',
];

/** A one-seal `call` event's `i`: a journal entry's field, the call's index in decimal. */
const CALL_INDEX = /^(0|[1-9][0-9]{0,14})$/;

export function createRunReads(
  redis: Redis,
  sealer: Sealer,
  shared: {
    maxEvents: string;
    sealEvent: (v: unknown) => string;
    sealStatus: (status: string) => string;
    /** ISLET_CALL_ONE_SEAL: `callEvent` writes the one-seal form (call-event-reads.ts). */
    callOneSeal?: boolean;
    /** Opens a run's end (`ended`, format 1's `result`, `text`, `textRef`); default `sealer`. */
    endSealer?: Sealer;
  },
) {
  const { maxEvents, sealEvent, sealStatus } = shared;
  const callOneSeal = shared.callOneSeal === true;
  // A one-seal `call` event's stream key and wake-up text, pure functions of the run id: made once
  // for the run whose calls come in a row (a hundred-call batch's hundred), not two strings a call.
  let named: { runId: string; streamKey: string; message: string } | undefined;
  const callEventNames = (runId: string) => {
    if (named === undefined || named.runId !== runId)
      named = { runId, streamKey: keys.runEvents(runId), message: `${runId} call` };
    return named;
  };
  const open = <T>(v: string | undefined): T | undefined =>
    v ? (JSON.parse(sealer.open(v)) as T) : undefined;
  const endSealer = shared.endSealer ?? sealer;
  const openEndValue = <T>(v: string | undefined): T | undefined =>
    v ? (JSON.parse(endSealer.open(v)) as T) : undefined;

  /**
   * A run from its record's fields as read from Redis (null: no record). `openDescription`: the
   * caller reads the description at once (a record for an answer), so it is opened now, a plain
   * field, not behind the accessor `openOnRead` defines (that definition alone cost a gateway's
   * pushed end ~13 µs, test/bench/README.md round 28). `'unread'`: the caller never reads it (a
   * runner's pick-up, `RunLifecycle.beginAttempt`), so it stays `''`, neither opened nor behind
   * the accessor, whose definition turns the run into a dictionary-mode object (each later read of
   * its fields a hash lookup) and cost a runner ~11 µs of its ~1 ms a run at 16 clients
   * (test/bench/README.md, round 39 `runner-cpu`).
   */
  function fromHash(
    h: Partial<Record<string, string>>,
    openDescription: DescriptionRead = false,
    known?: KnownRun,
  ): StoredRun | null {
    if (!h.id) return null;
    // Format 2's one field of the program and its request (sealed-fields.ts), else format 1's two.
    const picked = h.pick
      ? known?.id === h.id
        ? known
        : openPick(sealer, h.id, h.pick)
      : knownProgram(h, known);
    const run: StoredRun = {
      id: h.id,
      tenant: h.tenant ?? '',
      session: h.session ?? '',
      turn: h.turn ?? '',
      callId: h.callId ?? '',
      status: h.status as RunStatus,
      mode: h.mode as SandboxMode,
      code: picked ? picked.code : h.code ? sealer.open(h.code) : '',
      description: '',
      request: picked
        ? picked.request
        : (open<RunRequestData>(h.request) ?? { connections: [], bindings: [] }),
      createdAt: Number(h.createdAt),
      updatedAt: Number(h.updatedAt),
      attempts: Number(h.attempts ?? 0),
      cancelRequested: h.cancelRequested === '1',
      // Absent: written by format 2 (run-store-args.ts `recordFields`) when it equals `createdAt`.
      clockMs: Number(h.clockMs ?? h.createdAt),
      seed: h.seed ?? h.id,
    };
    openEnd(run, h);
    if (h.principal) run.principal = h.principal;
    if (h.pushEnd === '1') run.pushEnd = true;
    if (h.description && openDescription !== 'unread') {
      if (known?.id === h.id && known.description.isWellFormed()) run.description = known.description;
      else if (openDescription) run.description = sealer.open(h.description);
      else openOnRead(run, h.description);
    }
    return run;
  }

  /**
   * The end's result, text and kind into `run`, in either format (and nothing before an end).
   * `keepResultJson`: a pushed end's waiter answers the result at once (sealed-fields.ts
   * `openedResultJson`).
   */
  function openEnd(run: StoredRun, h: Partial<Record<string, string>>, keepResultJson = false): void {
    if (h.ended) {
      // Format 2's one field of the result and its text (sealed-fields.ts).
      const ended = openEnded(endSealer, run.id, h.ended, keepResultJson);
      run.result = ended.result;
      run.text = ended.text;
    } else {
      const result = openEndValue<RunResult>(h.result);
      if (result) run.result = result;
      if (h.text) run.text = endSealer.open(h.text);
      const ref = openEndValue<TextRef>(h.textRef);
      if (ref && result) run.text = textFromRef(ref, result);
    }
    // A Completed record without `kind` is `none`: every writer so far stores `kind none`, and a
    // later release may leave it out (31 B of a run's end, test/bench/README.md round 41
    // `format-default`); this release reads either, so the one after may stop writing it.
    if (h.kind) run.kind = h.kind;
    else if (h.status === 'Completed') run.kind = 'none';
  }

  /**
   * An ended run from its lean pushed end (`<id> end2`, includes/transition.lua): the fields an
   * execution and its end write, read from the push, and the submit's — program, request,
   * description, session and the other plain ones — from `known`, the run its reader holds (its
   * submit's, or as it read it), which the push leaves out (round 41 `push-lean`). Null when the
   * push is not of `known`, or `known` does not hold the stored text: a program or description
   * with a lone surrogate, which a seal stores as U+FFFD in format 1 (the caller reads the run).
   */
  function fromLeanEnd(flat: unknown, known: StoredRun): StoredRun | null {
    const h = readFields(flat);
    if (!h || h.id !== known.id || !known.code.isWellFormed() || !known.description.isWellFormed())
      return null;
    const run: StoredRun = {
      id: known.id,
      tenant: known.tenant,
      session: known.session,
      turn: known.turn,
      callId: known.callId,
      status: h.status as RunStatus,
      mode: known.mode,
      code: known.code,
      description: known.description,
      request: known.request,
      createdAt: known.createdAt,
      updatedAt: Number(h.updatedAt),
      attempts: Number(h.attempts ?? 0),
      cancelRequested: h.cancelRequested === '1',
      clockMs: known.clockMs,
      seed: known.seed,
    };
    // Its reader answers the result at once (the gateway's waited submit): its text is kept.
    openEnd(run, h, true);
    if (known.principal) run.principal = known.principal;
    if (known.pushEnd) run.pushEnd = true;
    return run;
  }

  /**
   * Format 1's program and request from what the reader holds, when they are what opening gives:
   * the request is sealed as its JSON (well-formed text, it opens to the same value), the program
   * as itself, and a seal encodes UTF-8, so a program with a lone surrogate opens to another text
   * (U+FFFD) and is opened. Format 2's `pick` seals both as one JSON, exact for any text.
   */
  function knownProgram(
    h: Partial<Record<string, string>>,
    known: KnownRun | undefined,
  ): KnownRun | undefined {
    if (!known || known.id !== h.id || !h.code || !h.request || !known.code.isWellFormed()) return undefined;
    return known;
  }

  /**
   * A run from a script's flat answer of its record (HGETALL's `[field, value, …]`; empty or
   * not a list: null), as `fromHash(fieldsOf(flat))` gives it, without that record: the fields
   * `fromHash` reads go into one object of a fixed shape, the rest are passed over. A record built
   * from the answer's own strings looked each field name up as a key (~25 of them) and grew its
   * shape field by field, on a run's pick-up, cold (test/bench/README.md, round 32 `runner-run`).
   */
  function fromFields(
    flat: unknown,
    openDescription: DescriptionRead = false,
    known?: KnownRun,
  ): StoredRun | null {
    const h = readFields(flat);
    return h && fromHash(h, openDescription, known);
  }

  /**
   * The run's description opened when first read: a runner starting an attempt reads the record
   * but never its description (only answers and lists show it), and an open is a decryption.
   * Read, it is the text the eager open gave (and a corrupt seal throws there instead).
   */
  function openOnRead(run: StoredRun, sealed: string): void {
    let text: string | undefined;
    Object.defineProperty(run, 'description', {
      configurable: true,
      enumerable: true,
      get: () => {
        text ??= sealer.open(sealed);
        return text;
      },
      set: (value: string) => {
        text = value;
      },
    });
  }

  return {
    async get(id: string): Promise<StoredRun | null> {
      return fromHash(await redis.hgetall(keys.run(id)));
    },

    /** The run's status alone (null: no record), without opening the sealed fields. */
    async status(id: string): Promise<RunStatus | null> {
      return (await redis.hget(keys.run(id), 'status')) as RunStatus | null;
    },

    /** A run from its record's fields as read from Redis (null: no record). */
    fromHash,

    /** A run from a script's flat answer of its record's fields (null: no record). */
    fromFields,

    /** An ended run from a lean pushed end's record and the run its reader holds (or null). */
    fromLeanEnd,

    /**
     * Appends an event to the run's stream (sealed) and wakes its readers. `tag` rides on the
     * wake-up (`<id> <tag>`): `log` (live output) is progress, published on the progress channel
     * for SSE readers; untagged events wake waiters too (`islet:run-events`).
     */
    async appendEvent(
      runId: string,
      type: string,
      data: Record<string, unknown>,
      tag?: 'log',
    ): Promise<string> {
      const res = await redis
        .multi()
        .xadd(keys.runEvents(runId), 'MAXLEN', '~', maxEvents, '*', 'type', type, 'data', sealEvent(data))
        .publish(tag ? channels.runProgress : channels.runEvents, tag ? `${runId} ${tag}` : runId)
        .exec();
      return String(res?.[0]?.[1] ?? '');
    },

    /**
     * A binding call's `call` event (call-event.ts), for the journal's `complete` step to append
     * with the outcome: stream, sealed data, the wake-up tagged `call` on the progress channel
     * (SSE readers wake for it; it ends no `Prefer: wait`). `data` may be a function, called only
     * for the sealed form. With ISLET_CALL_ONE_SEAL and `startedNs` (the call's start), the one-seal
     * form: the event names its call, its data is read from the journal (call-event-reads.ts).
     */
    callEvent(
      runId: string,
      data: Record<string, unknown> | (() => Record<string, unknown>),
      startedNs?: bigint,
    ): CompletionEvent {
      // One-seal form (`callOneSeal`, given the call's start): no data built or sealed here; the
      // script stores the call's index and this duration, the reader the rest from the journal.
      if (callOneSeal && startedNs !== undefined) {
        const named = callEventNames(runId);
        return {
          streamKey: named.streamKey,
          maxLen: Number(maxEvents),
          type: 'call',
          sealedData: '',
          ms: durationMsSince(startedNs),
          channel: channels.runProgress,
          message: named.message,
        };
      }
      return {
        streamKey: keys.runEvents(runId),
        maxLen: Number(maxEvents),
        type: 'call',
        sealedData: sealEvent(typeof data === 'function' ? data() : data),
        channel: channels.runProgress,
        message: `${runId} call`,
      };
    },

    /**
     * The `Running` status event of an attempt's start, for journal.beginAttempt (which adds the
     * attempt number when it knows it): stream, sealed data, the tagged wake-up on the progress
     * channel (a run's start ends no `Prefer: wait`, so no gateway without an SSE reader wakes).
     */
    attemptStartEvent(runId: string) {
      return {
        streamKey: keys.runEvents(runId),
        maxLen: Number(maxEvents),
        type: 'status',
        sealedData: sealStatus('Running'),
        channel: channels.runProgress,
        message: `${runId} running`,
      };
    },

    /** Events after `afterId` (exclusive; `0` = from the start). */
    async readEvents(runId: string, afterId = '0', count = 500): Promise<RunEvent[]> {
      const start = afterId === '0' ? '-' : `(${afterId}`;
      const rows = await redis.xrange(keys.runEvents(runId), start, '+', 'COUNT', count);
      // A `call` event in its one-seal form (`i`, `ms`, no `data`): its data is its journal entry's,
      // read for all of them at once after the rows (call-event-reads.ts).
      const refs: CallEventRef[] = [];
      const refAt: number[] = [];
      const events = rows.map(([id, f], at): RunEvent => {
        const m: Record<string, string> = {};
        for (let i = 0; i + 1 < f.length; i += 2) m[f[i]!] = f[i + 1]!;
        // `i` only as the script writes it (a call's index): never another journal field's name.
        if (m.data === undefined && m.type === 'call' && m.i !== undefined && CALL_INDEX.test(m.i)) {
          refs.push({ i: m.i, ms: m.ms ?? '0' });
          refAt.push(at);
          return { id, type: 'call', data: {} };
        }
        const data = open<Record<string, unknown>>(m.data) ?? {};
        // An attempt's start carries its number beside the sealed data (journal.beginAttempt).
        if (m.attempt !== undefined) data.attempt = Number(m.attempt);
        return { id, type: m.type ?? 'unknown', data };
      });
      if (refs.length > 0) {
        const data = await callEventsFromJournal(redis, sealer, runId, refs);
        for (let r = 0; r < refs.length; r++) (events[refAt[r]!] as RunEvent).data = data[r]!;
      }
      return events;
    },
  };
}
