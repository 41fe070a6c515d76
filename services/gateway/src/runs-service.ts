/**
 * Submitting, reading, waiting for and cancelling runs: the logic behind the run routes, kept
 * out of the route files so decisions and replay can reuse it. A refused admission's problem
 * moved to admission-refusals.ts (`throwIfRefused`), cancelling a run to run-cancel.ts.
 */

import { createHash, randomUUID } from 'node:crypto';
import { keys } from '@islet/core';
import { type CodeRunRecord, isFinalStatus } from '@islet/protocol';
import {
  type AdmissionRateCount,
  type AdmissionRide,
  type AdmissionStorage,
  decisionView,
  ESCALATION_INDEX,
  type JournalCallView,
  type StoredRun,
} from '@islet/runs';
import { throwIfRefused } from './admission-refusals.ts';
import type { Caller } from './auth.ts';
import type { GatewayDeps } from './deps.ts';
import { GOING_ON_TAGS } from './event-hub.ts';
import { createOwnership, mayActOn } from './ownership.ts';
import { HttpProblem } from './problem-reply.ts';
import { toRecord } from './record.ts';
import { createRunBuilder, type SubmitInput } from './run-build.ts';
import { createRunCancel } from './run-cancel.ts';
import { createStorageQuota, storedSizeOf } from './storage-quota.ts';
import { asWaitSignal, createRecheckClock, type WaitSignal } from './wait-signal.ts';

export function createRunsService(deps: GatewayDeps) {
  const { runs, lifecycle, config, journal, hub } = deps;
  const ownership = createOwnership(deps);
  const storage = createStorageQuota(deps);
  const buildRun = createRunBuilder(deps);
  // The waits' re-checks share one timer (wait-signal.ts): a waited run makes and clears none.
  const recheck = createRecheckClock();
  const cancel = createRunCancel(deps, ownership.run);

  async function record(run: StoredRun): Promise<CodeRunRecord> {
    // Calls that wait for a decision show `Waiting` (helper-5).
    const waiting =
      run.status === 'Waiting'
        ? new Set(
            (await deps.decisions.listRun(run.id)).filter((d) => d.state === 'pending').map((d) => d.index),
          )
        : undefined;
    return (
      recordInHand(run) ??
      toRecord(run, await (journalWithRun.get(run) ?? journal.listCalls(run.id)), waiting)
    );
  }

  /**
   * A pushed end's run's record (`waitForEnd`: its journal came with it, it waits for no decision),
   * built with no async call, promise or await (round 40 `end-turn`); undefined for any other run.
   */
  function recordInHand(run: StoredRun): CodeRunRecord | undefined {
    const calls = endedCalls.get(run);
    return calls && toRecord(run, calls);
  }

  /** The run if the caller may act on it (ownership.ts); 404 otherwise (existence never leaks). */
  const own = ownership.run;

  /**
   * `waits`: the caller waits for the run's end right after (`Prefer: wait`, MCP): its end is
   * pushed with the end message (StoredRun.pushEnd). Not part of the idempotent request: a retry
   * may wait where the first did not.
   */
  async function submit(
    caller: Caller,
    input: SubmitInput,
    idempotencyKey?: string,
    options: {
      waits?: boolean;
      /** The request's rate-limit count, made in the run's admission (auth.ts, `request.rateCount`). */
      rate?: AdmissionRateCount;
    } = {},
  ): Promise<{ run: StoredRun; created: boolean }> {
    const tenant = caller.tenantId;
    const id = randomUUID();
    // The key's Redis name and what this request stores in it, when it came with one.
    let key: string | undefined;
    let mine: string | undefined;
    if (idempotencyKey !== undefined) {
      if (!/^[\x21-\x7e]{1,200}$/.test(idempotencyKey))
        throw new HttpProblem('validation', 'Idempotency-Key must be 1-200 visible ASCII characters');
      key = keys.idempotency(tenant, idempotencyKey);
      const hash = createHash('sha256').update(JSON.stringify(input)).digest('hex');
      mine = JSON.stringify({ runId: id, hash });
      const ttl = config.ISLET_RUN_RETENTION_SECONDS;
      const claim = await runs.claimIdempotency(key, mine, ttl);
      if (!claim.taken) {
        const held = claim.held;
        const prev = JSON.parse(held ?? '{}') as { runId?: string; hash?: string };
        // Our own SET, sent again after a lost reply (a Redis restart): the key is this request's.
        if (prev.runId !== id) {
          if (prev.hash !== hash)
            throw new HttpProblem(
              'idempotency-conflict',
              'this Idempotency-Key was used with a different request body',
            );
          // The first request may still be writing its run; give it a moment.
          for (let i = 0; i < 50; i++) {
            const existing = prev.runId ? await runs.get(prev.runId) : null;
            // Another principal's key string: its run (and result) is not this caller's to see.
            if (existing && !mayActOn(caller, existing))
              throw new HttpProblem(
                'idempotency-conflict',
                'this Idempotency-Key is in use by another request',
              );
            if (existing) return { run: existing, created: false };
            await new Promise((r) => setTimeout(r, 20));
          }
          // No run after that: the first request died (or stalls) before storing it. This retry
          // takes the key over unless that run was admitted, and the first, if it lives, is
          // refused at its admission: one run per key either way.
          if (
            !held ||
            !prev.runId ||
            !(await runs.takeOverIdempotency(tenant, key, held, mine, ttl, prev.runId))
          )
            throw new HttpProblem(
              'conflict',
              'the first request with this Idempotency-Key has not finished; retry',
            );
        }
      }
    }
    try {
      return {
        run: await create(caller, id, input, options.waits === true, key, options.rate),
        created: true,
      };
    } catch (err) {
      // Only while the key is still this request's (a retry may have taken it over meanwhile).
      if (key !== undefined && mine !== undefined)
        await runs.releaseIdempotency(key, mine).catch(() => undefined);
      throw err;
    }
  }

  async function create(
    caller: Caller,
    id: string,
    input: SubmitInput,
    waits: boolean,
    idempotencyKey: string | undefined,
    rate: AdmissionRateCount | undefined,
  ): Promise<StoredRun> {
    const tenant = caller.tenantId;
    const limit = caller.tenant.maxInFlightRuns ?? config.ISLET_MAX_IN_FLIGHT_RUNS;
    // The storage quota is checked in the admission, first (its share here: cached, a Redis INFO
    // at most once a minute, overlapping building and sealing the run). A refusal met before the
    // admission reads the usage first, so a tenant past its share hears that one first, as from
    // the admission. The session and in-flight quota are checked in the admission too.
    const storageLimit = storage.limitBytes();
    let built: Awaited<ReturnType<typeof buildRun>>;
    try {
      // In hand when its cached reads are (run-build.ts): awaited only when it is a promise.
      const building = buildRun(caller, id, input, waits);
      built = building instanceof Promise ? await building : building;
    } catch (err) {
      await storage.check(tenant);
      throw err;
    }
    const { run, codeModeOff } = built;
    const { mode, session } = run;
    // A run that will simply run is enqueued with its record (one round trip less before the runner
    // can take it); one that is refused or must first wait for a decision is not.
    const runsNow = !codeModeOff && !run.request.sandboxPermissions;
    let enqueued = false;
    let ride: AdmissionRide | undefined;
    const storedBytes = storedSizeOf(run);
    const admissionStorage: AdmissionStorage = {
      limitBytes: typeof storageLimit === 'number' ? storageLimit : await storageLimit,
    };
    const admitted = await lifecycle.admit(
      run,
      {
        maxInFlight: limit,
        sessionTtlSeconds: config.ISLET_RUN_RETENTION_SECONDS,
        ...(idempotencyKey ? { idempotencyKey } : {}),
        ...(rate ? { rate } : {}),
        // The record's sealed program and request, counted by the admission (its output is
        // counted when it ends, run-store.ts).
        storedBytes,
        storage: admissionStorage,
        ...(runsNow && deps.poolDemand.on ? { countQueued: true } : {}),
        ...(runsNow ? { carriesAdd: true } : {}),
      },
      runsNow
        ? (counted, carrier) => {
            enqueued = true;
            ride = carrier;
            return enqueue(run, counted, carrier);
          }
        : undefined,
    );
    // On one server the job goes out with the record, so a refused one's was sent (runs.create):
    // take it back. A runner that took it first found no record and dropped it; a failed removal
    // leaves it to that.
    // (A job that carried its admission was added only when admitted: nothing to take back.)
    if (admitted !== 'created' && enqueued && !ride?.carried)
      await deps.runQueue.takeBack(mode, run.id).then(
        (removed) => (removed ? deps.poolDemand.unqueued(mode, run.tenant) : undefined),
        (err: unknown) => {
          deps.logger.warn({ err, runId: run.id }, 'the job of a refused submit could not be removed');
        },
      );
    throwIfRefused(admitted, session, rate, limit, admissionStorage);
    // Admitted: its binding calls, when it makes any here, need not read it back (call-run-cache.ts).
    if (admitted === 'created') deps.callRuns.seed(run);

    if (codeModeOff) {
      const message = 'Code Mode is off in the platform settings';
      await lifecycle.fail(run, {
        status: 'Failed',
        reason: 'Unavailable',
        kind: 'sandbox-unavailable',
        message,
        kindInResult: false,
      });
      return (await runs.get(id)) ?? run;
    }
    if (run.request.sandboxPermissions) {
      // Wider access asks before anything runs (run_code: "nothing runs before you answer").
      // Decisions pick the run up from here; until then it waits.
      const { decision } = await deps.decisions.request({
        tenant,
        mode,
        runId: id,
        index: ESCALATION_INDEX,
        toolCallId: run.callId,
        code: run.code,
        approval: 'stop',
        escalation: { mode, justification: run.request.justification ?? '' },
      });
      await lifecycle.suspend(run, { escalation: true });
      await runs.appendEvent(id, 'decision.needed', { ...decisionView(decision) });
      return (await runs.get(id)) ?? run;
    }
    // The submit answers the run as it was accepted, and no call is journaled before the
    // admission that stored it: its record needs no journal read (a round trip a 202 paid).
    journalWithRun.set(run, NO_CALLS);
    return run;
  }

  /**
   * `counted`: the admission's script counted the job in its pool's queued counts already. Not
   * `async`: the add's own promise when there is no count to wait for (round 44 `submit-peek`).
   */
  function enqueue(run: StoredRun, counted = false, ride?: AdmissionRide): Promise<unknown> {
    try {
      // The count first, on the same connection: a runner never takes the job before it.
      const noted = counted ? undefined : deps.poolDemand.queued(run.mode, run.tenant);
      const added = deps.runQueue.enqueueRun(
        { runId: run.id, tenant: run.tenant, mode: run.mode, attempts: config.ISLET_JOB_ATTEMPTS },
        ride,
      );
      // The count awaited only when sent (the admission counted it: nothing to wait for).
      return noted ? added.then(() => noted) : added;
    } catch (err) {
      // As from an async function: a rejection, never a throw.
      return Promise.reject(err);
    }
  }

  // The journal read with a run's final state, keyed by that run object: `record` uses it instead
  // of reading again (the two reads go out together, one round trip).
  const journalWithRun = new WeakMap<StoredRun, Promise<JournalCallView[]>>();
  const NO_CALLS: Promise<JournalCallView[]> = Promise.resolve([]);
  // A pushed end's journal, in hand (`recordInHand`).
  const endedCalls = new WeakMap<StoredRun, JournalCallView[]>();

  /**
   * Waits until the run ends, or waits for a decision (nothing will happen without one, so the
   * caller should hear it now), or `ms` pass; returns the latest stored run. `writtenAt`: this
   * replica wrote the run then (a submit), so while nothing was published about it since, it is
   * known unchanged and the first read is skipped. `known`: the run as this request holds it (its
   * submit's, or as it read it), whose program, request, description and the submit's other fields
   * a pushed end's record is read with: a lean push (`end2`) carries only the fields its execution
   * and end wrote (run-reads.ts `fromLeanEnd`); a whole one (`end`, a runner of a release before
   * round 41) is read with it as `KnownRun`, not opening and parsing them again. Without `known`, a
   * lean push is not read: the run is read back.
   */
  async function waitForEnd(
    id: string,
    ms: number,
    abortSignal?: AbortSignal | WaitSignal,
    writtenAt?: number,
    known?: StoredRun,
  ): Promise<StoredRun | null> {
    const signal = abortSignal && asWaitSignal(abortSignal);
    const deadline = Date.now() + ms;
    // Listen before reading: a change published while the status read is in flight (the message
    // can arrive on the subscriber connection before the read's reply) wakes the next wait at
    // once instead of being lost until the 1 s re-check.
    let changed = false;
    let wake: (() => void) | undefined;
    // The run's end as its final transition published it (record and journal), read no more;
    // `lean`: pushed as `end2` (includes/transition.lua), the record without the submit's fields.
    let pushed: string | undefined;
    let lean = false;
    const off = hub.listen(id, (tag, payload) => {
      // A binding call's event, or an attempt starting: the run goes on (every call of a busy run,
      // and every run's start, would cost a read of the whole run and its journal).
      if (tag !== undefined && GOING_ON_TAGS.has(tag)) return;
      // `end3`: `end2` with its journal's entries as JSON values (the next release's end script;
      // `callsOfPushed`, round 42 `format-next`).
      if (payload && (tag === 'end2' || tag === 'end3' || tag === 'end')) {
        pushed = payload;
        lean = tag !== 'end';
      }
      changed = true;
      wake?.();
    });
    let skipRead = writtenAt !== undefined && hub.quietSince(id, writtenAt);
    let withJournal = skipRead;
    try {
      for (;;) {
        changed = false;
        const ended = pushed === undefined ? null : endOf(pushed, lean, known);
        pushed = undefined;
        if (ended) return ended;
        if (!skipRead) {
          // The whole run, not just its status: the last read is the answer. Its journal goes out
          // with it (the record needs both), except on a first read, which rarely is the last.
          const journaled = withJournal ? journal.listCalls(id) : undefined;
          journaled?.catch(() => undefined);
          withJournal = true;
          const run = await runs.get(id);
          if (run && journaled) journalWithRun.set(run, journaled);
          if (
            !run ||
            isFinalStatus(run.status) ||
            run.status === 'Waiting' ||
            Date.now() >= deadline ||
            signal?.aborted
          )
            return run;
        }
        skipRead = false;
        if (changed) continue;
        await new Promise<void>((resolve) => {
          const done = () => {
            unfile();
            offAbort?.();
            wake = undefined;
            resolve();
          };
          const unfile = recheck.after(Math.min(1000, deadline - Date.now()), done);
          wake = done;
          const offAbort = signal?.onAbort(done);
        });
      }
    } finally {
      off();
    }
  }

  /**
   * The ended run from its pushed end, its journal kept for `record`; null if unreadable, or a lean
   * push (`lean`) without the run it leaves out (`known`, run-reads.ts `fromLeanEnd`).
   */
  function endOf(payload: string, lean: boolean, known: StoredRun | undefined): StoredRun | null {
    if (lean && !known) return null;
    let run: StoredRun | null;
    let entries: JournalCallView[];
    try {
      const [runFlat, journalFlat] = JSON.parse(payload) as [unknown, unknown];
      // Its record is built at once (the answer), description included; read from the flat answer
      // as the runner's pick-up reads its run (`fromFields`), not through a record of its fields.
      run = lean && known ? runs.fromLeanEnd(runFlat, known) : runs.fromFields(runFlat, true, known);
      entries = journal.callsOfPushed(journalFlat);
    } catch (err) {
      deps.logger.warn({ err }, 'a pushed run end could not be read; reading the run');
      return null;
    }
    if (!run || !isFinalStatus(run.status)) return null;
    endedCalls.set(run, entries);
    return run;
  }

  return {
    submit,
    own,
    record,
    recordInHand,
    waitForEnd,
    cancel,
    enqueue,
    mayRead: mayActOn,
    inTenant: ownership.runInTenant,
    claimSession: ownership.claimSession,
    mayReadSession: ownership.mayReadSession,
  };
}

export type RunsService = ReturnType<typeof createRunsService>;
