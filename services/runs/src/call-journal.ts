/**
 * The call journal on Redis. One hash per run (`<prefix>journal:{<runId>}`, hash-tagged so a
 * Redis Cluster keeps it in one slot): field `<index>` holds the call's entry as JSON (arguments
 * and outcome sealed), `#seq` counts delivered outcomes, `#attempt` the run's executions.
 * Every state change is one Lua script, so two gateway replicas claiming the same call agree.
 *
 * Two layouts of an entry, both read always (an entry keeps the one it was created in): 1, every
 * field in `<index>`; 2 (`writeFormat: '2'`), the claim part a run's answer never reads (the claim
 * token, the arguments' HMAC, the sealed arguments) in a field of its own, `#c<index>` as
 * `<tk> <h> <a>`, so a run's pushed end, its answer's reads and every outcome's rewrite
 * (lua/complete-2.lua) leave those ~160 B an entry out; and a call's source (the same text for
 * every call of a binding, ~95 B) once a journal at `#s:<id>`, the entry's `s` naming it by `<id>`
 * (a digest of the text), where layout 1 repeats the text in every entry (round 40 `journal-layout`).
 * An entry's stored shape and its claim part's field and text moved to journal-entry-layout.ts,
 * `JournalConflictError` to journal-conflict-error.ts (re-exported here), the Lua scripts it runs
 * to journal-scripts.ts, the views its reads build from a journal's fields to journal-views.ts.
 */
import { hash, randomUUID } from 'node:crypto';
import { keys as coreKeys, hmacSha256, hmacSha256Key } from '@islet/core';
import { fieldsOf } from '@islet/core/lua-script';
import type { BindingOutcome } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { type FetchedStartTerms, fetchedStart } from './fetched-start-args.ts';
import { JournalConflictError } from './journal-conflict-error.ts';
import { claimPartField, type StoredEntry } from './journal-entry-layout.ts';
import {
  BEGIN_ATTEMPT,
  CLAIM,
  COMPLETE,
  type Completion,
  LEASE_AND_BEGIN,
  MARK_SENT,
} from './journal-scripts.ts';
import { journalViews } from './journal-views.ts';
import { journalKeys } from './keys.ts';
import { acquireCall, type LeaseTerms, leaseAnswerOf, type RunLease } from './lease-scripts.ts';
import { operationIdFor } from './operation-id.ts';
import { DEFAULT_WRITE_FORMAT, type WriteFormat } from './run-store-types.ts';
import { TurnBatch } from './turn-batch.ts';
import type {
  BegunAttempt,
  CallJournal,
  CallSource,
  ClaimCall,
  ClaimResult,
  CompletionEvent,
  JournalCallView,
  JournalEntry,
  Sealer,
} from './types.ts';

export { JournalConflictError };

interface CallJournalDeps {
  redis: Redis;
  sealer: Sealer;
  /**
   * Seals and opens the calls' outcomes (default `sealer`). The gateway passes a memo of its own
   * seals (own-seal-memo.ts): the waiter of a run whose calls it served reads every outcome back
   * at the run's end (the record's `calls`), a decryption each of text it sealed moments before.
   */
  outcomeSealer?: Sealer;
  /** Prefix of every key. Default `islet:`. */
  keyPrefix?: string;
  /**
   * The retention, seconds (default 604800, 7 days): only an attempt start's term now (its script
   * no longer reads it; a 9f886855 hand-off registration carries it). A run's journal has no
   * expiry while the run lives and takes the record's at its end (lua/claim-1.lua, round 46).
   */
  ttlSeconds?: number;
  /**
   * Key of the HMAC that lets Lua compare arguments without reading them (the arguments
   * themselves are sealed). Default: a fixed key, which still hides them from casual reads but
   * not from guessing; pass a secret in production.
   */
  argsHashKey?: string | Buffer;
  now?: () => number;
  /** ISLET_WRITE_FORMAT: the layout new entries are written in (default `DEFAULT_WRITE_FORMAT`, 2; both are read). */
  writeFormat?: WriteFormat;
}

/**
 * A group's bounds: the engine lets a run have 128 calls in flight by default, and a script call
 * of a few MiB keeps Redis's other clients waiting no longer than one large call would.
 */
const GROUP_LIMITS = { maxItems: 128, maxBytes: 4 * 1024 * 1024 };
const OUTCOME_GROUP_LIMITS = { ...GROUP_LIMITS, oneInFlight: true };

export function createCallJournal(deps: CallJournalDeps): CallJournal {
  const { redis, sealer } = deps;
  const outcomeSealer = deps.outcomeSealer ?? sealer;
  const prefix = deps.keyPrefix ?? 'islet:';
  const ttlSeconds = deps.ttlSeconds ?? 604_800;
  const rawKey = deps.argsHashKey ?? 'islet-journal-args';
  // The key's padded blocks made once, each HMAC two one-shot hashes (core's hmac-once.ts), not an
  // `Hmac` object a call: the same digest (test/bench/README.md, round 42 `par-cpu`).
  const hashKey = hmacSha256Key(typeof rawKey === 'string' ? Buffer.from(rawKey) : rawKey);
  const now = deps.now ?? Date.now;
  const writeFormat = deps.writeFormat ?? DEFAULT_WRITE_FORMAT;
  const keyOf = journalKeys(prefix).journal;
  const argsHash = (runId: string, index: number, argsJson: string) =>
    hmacSha256(hashKey, `${runId}\0${index}\0`, argsJson, 'base64url');

  // A run's calls of one binding share one source object (the gateway's), serialised once.
  const sourceTexts = new WeakMap<CallSource, string>();
  const sourceJson = (source: CallSource): string => {
    let text = sourceTexts.get(source);
    if (text === undefined) {
      text = JSON.stringify(source);
      sourceTexts.set(source, text);
    }
    return text;
  };
  // Layout 2 names a source by a digest of its text (the same id in every process), made once a
  // source object. 72 bits: two sources of one run colliding is not a concern.
  const sourceIds = new WeakMap<CallSource, string>();
  const sourceId = (source: CallSource): string => {
    let id = sourceIds.get(source);
    if (id === undefined) {
      id = hash('sha256', sourceJson(source), 'base64url').slice(0, 12);
      sourceIds.set(source, id);
    }
    return id;
  };

  const { openOutcome, toEntry, entriesOf, callsOf, callsOfPushed } = journalViews(sealer, outcomeSealer);

  // An outcome's group key, made of its run and what its event shares with the group: the last one
  // kept, so a run's calls in a row (their events' names are the same strings: run-reads.ts
  // `callEventNames`) find it by comparison, not by a six-part string made and hashed each.
  let lastGroup:
    | { runId: string; streamKey: string; maxLen: number; channel: string; message: string; key: string }
    | undefined;
  const eventGroupOf = (runId: string, event: CompletionEvent): string => {
    const g = lastGroup;
    if (
      g !== undefined &&
      g.runId === runId &&
      g.streamKey === event.streamKey &&
      g.maxLen === event.maxLen &&
      g.channel === event.channel &&
      g.message === event.message
    )
      return g.key;
    const { streamKey, maxLen, channel, message } = event;
    const key = `e\0${runId}\0${streamKey}\0${maxLen}\0${channel}\0${message}`;
    lastGroup = { runId, streamKey, maxLen, channel, message, key };
    return key;
  };

  // A run's claims made in one turn go as one script call, and so do its outcomes (turn-batch.ts).
  const claims = new TurnBatch<(string | number)[], string>(async (runId, calls) => {
    const args: (string | number)[] = [writeFormat];
    for (let c = 0; c < calls.length; c++) {
      const fields = calls[c] as (string | number)[];
      for (let f = 0; f < fields.length; f++) args.push(fields[f] as string | number);
    }
    return (await CLAIM.run(redis, [keyOf(runId), coreKeys.run(runId)], args)) as string[];
  }, GROUP_LIMITS);
  // Each item carries what its group shares (the group's key is made of it), read from the first.
  // One outcome group of a run in flight: the outcomes finished while it is unanswered go in the
  // next one, so a 100-call run's last answers wait on one or two fsyncs, not one a gateway turn.
  const completions = new TurnBatch<Completion, string[]>(async (_group, calls) => {
    const { runId, event } = calls[0] as Completion;
    const keys = event ? [keyOf(runId), event.streamKey] : [keyOf(runId)];
    const args: (string | number)[] = event ? [event.maxLen, event.channel, event.message] : [];
    // Indexed, not `push(...fields)`: this runs a few times a run, too seldom for V8 to optimize
    // a spread's iterator away, once per outcome (round 40 `par-calls`).
    for (let c = 0; c < calls.length; c++) {
      const fields = (calls[c] as Completion).fields;
      for (let f = 0; f < fields.length; f++) args.push(fields[f] as string | number);
    }
    return (await COMPLETE.run(redis, keys, args)) as string[][];
  }, OUTCOME_GROUP_LIMITS);

  /** lease-and-begin-9's or begin-attempt-3's answer (fetch-lease-begin-11 carries the former). */
  const begunOf = (reply: unknown, withLease: boolean): BegunAttempt => {
    const [runFlat, attempt, journalFlat, leaseReply] = reply as [string[], number, string[], unknown];
    return {
      runFields: runFlat,
      attempt: attempt > 0 ? attempt : undefined,
      entries: entriesOf(fieldsOf(journalFlat)),
      ...(withLease ? { lease: leaseAnswerOf(leaseReply) } : {}),
    };
  };

  const fetchedAttempt = (lease: LeaseTerms | RunLease): BegunAttempt | undefined => {
    const fetched = 'begun' in lease ? lease.begun : undefined;
    if (fetched === undefined) return undefined;
    (lease as RunLease).begun = undefined;
    return begunOf(fetched, true);
  };

  const get = async (runId: string, index: number): Promise<JournalEntry | undefined> => {
    const [raw, part] = await redis.hmget(keyOf(runId), String(index), claimPartField(index));
    if (!raw) return undefined;
    const stored = JSON.parse(raw) as StoredEntry;
    // A layout-2 source is read by its id (a second read; callers of `get` are off the run's path).
    const all: Record<string, string> = {};
    if (stored.s && stored.s.charCodeAt(0) !== 123) {
      const text = await redis.hget(keyOf(runId), `#s:${stored.s}`);
      if (text !== null) all[`#s:${stored.s}`] = text;
    }
    return toEntry(stored, part ?? undefined, undefined, all);
  };

  return {
    async claim(runId: string, attempt: number, call: ClaimCall): Promise<ClaimResult> {
      checkIndex(call.index);
      if (!Number.isSafeInteger(attempt) || attempt < 0) throw new RangeError(`bad attempt ${attempt}`);
      const token = randomUUID();
      const sealedArgs = sealer.seal(call.argsJson);
      const fields = [
        String(call.index),
        attempt,
        call.binding,
        argsHash(runId, call.index, call.argsJson),
        sealedArgs,
        call.source ? sourceJson(call.source) : '',
        call.operationId ?? operationIdFor(runId, call.index),
        now(),
        call.takeover ? '1' : '0',
        token,
        call.sendNow ? '1' : '0',
        call.source && writeFormat === '2' ? sourceId(call.source) : '',
      ];
      // One string a call (lua/claim-1.lua's header): its kind, then for `done` the sequence and the
      // sealed outcome, for `mismatch` the stored binding, each the rest of the text whole.
      const reply = await claims.add(runId, fields, sealedArgs.length);
      const space = reply.indexOf(' ');
      switch (space < 0 ? reply : reply.slice(0, space)) {
        case 'new':
          return { kind: 'new', token };
        case 'done': {
          const next = reply.indexOf(' ', space + 1);
          return {
            kind: 'done',
            outcome: openOutcome(reply.slice(next + 1)),
            deliverySeq: Number(reply.slice(space + 1, next)),
          };
        }
        case 'mismatch':
          return { kind: 'mismatch', expected: { binding: reply.slice(space + 1) } };
        case 'in-flight':
          return { kind: 'in-flight' };
        case 'unknown':
          return { kind: 'unknown' };
        case 'superseded':
          return { kind: 'superseded' };
        default:
          throw new Error(`journal claim: unexpected reply ${reply.slice(0, 40)}`);
      }
    },

    async markSent(runId: string, index: number, token?: string): Promise<void> {
      const reply = (await MARK_SENT.run(redis, [keyOf(runId)], [String(index), token ?? ''])) as string;
      if (reply === 'missing') throw new Error(`journal: markSent of unclaimed call ${runId}#${index}`);
      if (reply === 'conflict') {
        throw new JournalConflictError(`call ${runId}#${index} was taken over by another handler; not sent`);
      }
    },

    async complete(
      runId: string,
      index: number,
      outcome: BindingOutcome,
      event?: CompletionEvent,
      outcomeJson?: string,
    ) {
      const sealedOutcome = outcomeSealer.seal(outcomeJson ?? JSON.stringify(outcome));
      const fields = [
        String(index),
        sealedOutcome,
        now(),
        event?.type ?? '',
        event?.sealedData ?? '',
        // A `call` event's one-seal form: its duration; the script writes the index beside it.
        event?.ms ?? '',
      ];
      // Outcomes gather by run and by what they share in the script call (the stream and its wake-up).
      // (Run ids are unreserved characters: no NUL within a part.)
      const group = event ? eventGroupOf(runId, event) : `n\0${runId}`;
      const reply = await completions.add(
        group,
        { runId, event, fields },
        sealedOutcome.length + (event?.sealedData.length ?? 0),
      );
      if (reply[0] === 'missing') throw new Error(`journal: complete of unclaimed call ${runId}#${index}`);
      return { deliverySeq: Number(reply[1]), stored: reply[0] === 'stored' };
    },

    async list(runId: string): Promise<JournalEntry[]> {
      return entriesOf(await redis.hgetall(keyOf(runId)));
    },

    async listCalls(runId: string): Promise<JournalCallView[]> {
      return callsOf(await redis.hgetall(keyOf(runId)));
    },

    callsOf,

    callsOfPushed,

    get,

    fetchedAttempt,

    async beginAttempt(
      runId: string,
      runKey: string,
      start?: CompletionEvent,
      lease?: LeaseTerms | RunLease,
    ): Promise<BegunAttempt> {
      // The worker's fetch made this start already (fetch-lease-begin-11): its answer is read once.
      const fetched = lease && fetchedAttempt(lease);
      if (fetched) return fetched;
      const args: (string | number)[] = [ttlSeconds];
      if (start) args.push(start.maxLen, start.type, start.sealedData, start.channel, start.message, now());
      const keys = start ? [keyOf(runId), runKey, start.streamKey] : [keyOf(runId), runKey];
      if (lease && !start) throw new Error('a lease rides only in an attempt start with its event');
      // With a lease: one script decides it first and, only when granted, begins the attempt.
      const acquire = lease && acquireCall(lease);
      const reply = await (acquire
        ? LEASE_AND_BEGIN.run(redis, acquire.keys.concat(keys), acquire.args.concat(args))
        : BEGIN_ATTEMPT.run(redis, keys, args));
      return begunOf(reply, acquire !== undefined);
    },

    fetchedStart(terms: Omit<FetchedStartTerms, 'journalKey' | 'ttlSeconds' | 'nowMs'>) {
      return fetchedStart({ ...terms, journalKey: keyOf, ttlSeconds, nowMs: now() });
    },

    async nextAttempt(runId: string): Promise<number> {
      const key = keyOf(runId);
      // As an attempt's start (includes/begin-attempt.lua): a live run's journal has no expiry.
      const [[, attempt]] = (await redis.multi().hincrby(key, '#attempt', 1).persist(key).exec()) as [
        [Error | null, number],
      ];
      return attempt;
    },

    async waitForOutcome(runId, index, options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 30_000);
      const pollMs = options.pollMs ?? 50;
      for (;;) {
        const entry = await get(runId, index);
        if (entry?.state === 'done' && entry.outcome && entry.deliverySeq !== undefined) {
          return { outcome: entry.outcome, deliverySeq: entry.deliverySeq };
        }
        if (Date.now() + pollMs > deadline) return undefined;
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    },

    async remove(runId: string): Promise<void> {
      await redis.del(keyOf(runId));
    },
  };
}

function checkIndex(index: number): void {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`bad call index ${index}`);
}
