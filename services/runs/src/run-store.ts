/**
 * Run records in Redis hashes, their per-run event streams, and the session and in-flight
 * indexes. Program text, request, result and result text are sealed; ids, status and times are
 * not (they are needed to list and route). Final statuses are written by one Lua script that
 * refuses to overwrite a final status, so a run reaches exactly one, whoever races to end it.
 *
 * Slots (keys.ts): a run's record and events are in the run's slot, its tenant's in-flight set and
 * session index in the tenant's. No write spans both; where one change needs both it is two
 * single-slot scripts in a fixed order, and a crash between them is repaired:
 * - create: tenant half first (in-flight ZADD with createdAt, session index), run half second
 *   (record, first event, the session-runs publish). Died in between: an in-flight id with no
 *   record; the recovery loop's in-flight walk drops it once older than its grace (session listings skip
 *   ids whose record is missing and prune them). On one server an admitted submit writes both
 *   halves in one script (ADMIT_AND_CREATE).
 * - end: on one server one script (FINISH_RUN: the final status, the in-flight ZREM, the index,
 *   usage and health, the stored bytes; with the runner's slot lease still held, the lease given
 *   back too: FINISH_RUN_RELEASE). On a Cluster the run's final script, then the tenant
 *   half. Died in between: an in-flight id whose record is final; the recovery loop's in-flight
 *   walk drops it.
 */

import { channels, isRedisCluster, keys, type Sealer, sendTogether, slotFreeCheck } from '@islet/core';
import type { RunResult, RunStatus, SandboxMode, TimeBudget } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { journalKeys } from './keys.ts';
import { type RunLease, releaseCall } from './lease-scripts.ts';
import { finishTenantCall, indexCreateArgs, type RunUsage, runIndexKeys } from './run-index.ts';
import { FINISH_TENANT } from './run-index-scripts.ts';
import {
  ADMIT_AND_CREATE,
  ADMIT_TENANT,
  CREATE_RUN,
  CREATE_TENANT,
  FINISH_RUN,
  FINISH_RUN_RELEASE,
  IDEM_RELEASE,
  IDEM_TAKE_OVER,
  IN_FLIGHT_COUNT,
  RESERVE_SKILL,
  TRANSITION,
} from './run-store-scripts.ts';
import { type TextRef, textFromRef, textRefOf } from './stored-text.ts';
import { createTenantBytesStore } from './tenant-bytes-store.ts';
import type { CompletionEvent } from './types.ts';

/**
 * What a create with an admission answers: stored, or refused because the tenant's retained data
 * holds its share of storage (checked first, see AdmissionStorage), the request passed the
 * tenant's rate limit (counted at admission), the session is another principal's, the tenant is at
 * its in-flight quota, or its Idempotency-Key was taken over.
 */
type Admission = 'created' | 'over-storage' | 'rate-limited' | 'session-taken' | 'over-quota' | 'superseded';

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

interface RunRequestData {
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
 * (`performance.timeOrigin + performance.now()`). Stored unsealed beside the end (no program data
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

interface RunEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

const DEFAULT_MAX_EVENTS_PER_RUN = 2000;

interface RunStoreOptions {
  /** Events kept per run stream (approximate trim). Default `DEFAULT_MAX_EVENTS_PER_RUN` (2000). */
  maxEventsPerRun?: number;
  /** Lifetime of a finished run's record and events. Default 7 days. */
  retentionSeconds?: number;
}

export function createRunStore(redis: Redis, sealer: Sealer, options: RunStoreOptions = {}) {
  const maxEvents = String(options.maxEventsPerRun ?? DEFAULT_MAX_EVENTS_PER_RUN);
  const retention = String(options.retentionSeconds ?? 7 * 24 * 3600);
  // A run's end is counted in its tenant's stored bytes (tenant-bytes-store.ts) as it is written.
  const storedBytes = createTenantBytesStore(redis, { retentionSeconds: Number(retention) });
  const seal = (v: unknown) => sealer.seal(JSON.stringify(v));
  // A status event's data is one of a handful of constants (`{"status":"Running"}` at every
  // attempt's start, the final status at every end): each is sealed once per store and the sealed
  // text reused. The same plaintext under the same IV gives the same text, so a reader learns only
  // that two such events are equal, which their type and position already say; a fresh seal per
  // run cost the runner two AES-GCM setups a run for nothing.
  const sealedStatuses = new Map<string, string>();
  const sealStatus = (status: string): string => {
    let sealed = sealedStatuses.get(status);
    if (sealed === undefined) {
      sealed = seal({ status });
      sealedStatuses.set(status, sealed);
    }
    return sealed;
  };
  const open = <T>(v: string | undefined): T | undefined =>
    v ? (JSON.parse(sealer.open(v)) as T) : undefined;

  /** A run from its record's fields as read from Redis (null: no record). */
  function fromHash(h: Record<string, string>): StoredRun | null {
    if (!h.id) return null;
    const run: StoredRun = {
      id: h.id,
      tenant: h.tenant ?? '',
      session: h.session ?? '',
      turn: h.turn ?? '',
      callId: h.callId ?? '',
      status: h.status as RunStatus,
      mode: h.mode as SandboxMode,
      code: h.code ? sealer.open(h.code) : '',
      description: '',
      request: open<RunRequestData>(h.request) ?? { connections: [], bindings: [] },
      createdAt: Number(h.createdAt),
      updatedAt: Number(h.updatedAt),
      attempts: Number(h.attempts ?? 0),
      cancelRequested: h.cancelRequested === '1',
      clockMs: Number(h.clockMs),
      seed: h.seed ?? h.id,
    };
    const result = open<RunResult>(h.result);
    if (result) run.result = result;
    if (h.text) run.text = sealer.open(h.text);
    const ref = open<TextRef>(h.textRef);
    if (ref && result) run.text = textFromRef(ref, result);
    if (h.kind) run.kind = h.kind;
    if (h.principal) run.principal = h.principal;
    if (h.pushEnd === '1') run.pushEnd = true;
    if (h.description) openOnRead(run, h.description);
    return run;
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

  async function transition(
    run: { id: string; tenant: string; pushEnd?: boolean },
    fields: Record<string, string>,
    event: { type: string; data: Record<string, unknown> },
  ): Promise<boolean> {
    const flat = Object.entries({ ...fields, updatedAt: String(Date.now()) }).flat();
    // Tagged `running`: a move to Running (a decision allowed, a call answered) ends no
    // `Prefer: wait` (that waits for a final status or Waiting), so it goes on the progress
    // channel, which only gateways with an SSE reader subscribe to. An attempt's start is
    // tagged and sent the same way (attemptStartEvent).
    const running = fields.status === 'Running';
    const message = running ? `${run.id} running` : run.id;
    const channel = running ? channels.runProgress : channels.runEvents;
    const res = await TRANSITION.run(
      redis,
      // The journal's key with its default prefix, the one the gateway and runner use.
      run.pushEnd
        ? [keys.run(run.id), keys.runEvents(run.id), journalKeys().journal(run.id)]
        : [keys.run(run.id), keys.runEvents(run.id)],
      [message, channel, event.type, seal(event.data), maxEvents, retention, ...flat],
    );
    return res === 1;
  }

  const slotFree = slotFreeCheck(redis);

  /**
   * Takes an Idempotency-Key (`key`, its Redis key) over from a first request that stored no run,
   * for the retry that read `expected` from it (IDEM_TAKE_OVER says when it may). True: the key now
   * holds `replacement`, and the first request can no longer be admitted.
   */
  async function takeOverIdempotency(
    tenant: string,
    key: string,
    expected: string,
    replacement: string,
    ttlSeconds: number,
    firstRunId: string,
  ): Promise<boolean> {
    const taken = await IDEM_TAKE_OVER.run(
      redis,
      [key, keys.inFlight(tenant)],
      [expected, replacement, ttlSeconds, firstRunId],
    );
    return taken === 1;
  }

  /** Drops an Idempotency-Key whose request failed, while it still holds `value` (that request's). */
  async function releaseIdempotency(key: string, value: string): Promise<void> {
    await IDEM_RELEASE.run(redis, [key], [value]);
  }

  /** Runs not yet ended plus skills queued or running: what the in-flight quota counts. */
  async function inFlightCount(tenant: string): Promise<number> {
    const res = await IN_FLIGHT_COUNT.run(
      redis,
      [keys.inFlight(tenant), keys.skillsInFlight(tenant)],
      [Date.now()],
    );
    return Number(res ?? 0);
  }

  return {
    /**
     * Stores a new run: its tenant half, then its record. With `admission` the tenant half first
     * checks, in the same script, that the session is the run's principal's (or free: then it is
     * claimed for it) and that the tenant is under `maxInFlight`; a refusal writes nothing of the
     * run and is answered instead of 'created'. `then` (the run's enqueue) runs once the record
     * is stored, or on one server, right behind its write on the same connection (see below); it
     * must send its commands on this store's connection. On one server with both, admission and
     * record are one script and `then` has run even when the admission refused: the caller
     * removes what it sent (the job; a runner that takes it first finds no record and drops it).
     */
    async create(
      run: StoredRun,
      admission?: {
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
         * A check the caller started (a read): awaited once the record is sealed and its
         * arguments built, before anything is sent, so its round trip overlaps that work. A
         * rejection is thrown with nothing written or counted.
         */
        ready?: Promise<unknown>;
      },
      then?: () => Promise<unknown>,
    ): Promise<Admission> {
      // The record's and the summary's description: one plaintext, sealed once for both.
      const description = sealer.seal(run.description);
      const fields: Record<string, string> = {
        id: run.id,
        tenant: run.tenant,
        session: run.session,
        turn: run.turn,
        callId: run.callId,
        status: run.status,
        mode: run.mode,
        code: sealer.seal(run.code),
        description,
        request: seal(run.request),
        createdAt: String(run.createdAt),
        updatedAt: String(run.updatedAt),
        attempts: String(run.attempts),
        clockMs: String(run.clockMs),
        seed: run.seed,
      };
      if (run.principal) fields.principal = run.principal;
      if (run.pushEnd) fields.pushEnd = '1';
      // The tenant's run index is written in the same tenant-half script (run-index.ts).
      const ik = runIndexKeys(run.tenant);
      const indexKeys = [ik.pending, ik.summaries, ik.ended, ik.sessions, ik.sessionStats, ik.feed];
      const indexArgs = indexCreateArgs(
        run.tenant,
        {
          id: run.id,
          status: run.status,
          description,
          sessionId: run.session,
          ...(run.principal ? { principal: run.principal } : {}),
          style: run.request.style ?? 'run_code',
          mode: run.mode,
          createdAt: run.createdAt,
        },
        Number(retention),
      );
      const tenantKeys = [keys.inFlight(run.tenant), keys.sessionRuns(run.tenant, run.session)];
      // Not touched without bytes to count (a counter in the tenant's slot all the same). The
      // counter charged is the newest of those the storage check sums (one `now` for both).
      const chargedAt = Date.now();
      const charge = storedBytes.chargeArgs(run.tenant, admission?.storedBytes ?? 0, chargedAt);
      const storageLimit = admission?.storage?.limitBytes ?? Number.POSITIVE_INFINITY;
      const admitKeys = [
        ...tenantKeys,
        keys.skillsInFlight(run.tenant),
        keys.sessionOwner(run.tenant, run.session),
        // Not read without an Idempotency-Key (a name in the tenant's slot all the same).
        admission?.idempotencyKey ?? keys.idempotency(run.tenant, ''),
        // Not touched without a rate count (ditto).
        admission?.rate?.key ?? keys.rateWindow(run.tenant, 0),
        ...indexKeys,
        charge.key,
        // Not read without a share to check (ditto).
        ...storedBytes.usageKeys(run.tenant, chargedAt).slice(0, -1),
      ];
      const admitArgs = admission && [
        run.id,
        run.createdAt,
        admission.maxInFlight,
        run.principal ?? '',
        admission.sessionTtlSeconds,
        Date.now(),
        admission.idempotencyKey ? '1' : '0',
        admission.rate ? admission.rate.limit : '',
        ...indexArgs,
        ...charge.args,
        Number.isFinite(storageLimit) ? storageLimit : '',
      ];
      const runKeys = [keys.run(run.id), keys.runEvents(run.id)];
      const runArgs = [
        channels.sessionRuns,
        keys.sessionRuns(run.tenant, run.session),
        maxEvents,
        sealStatus(run.status),
        ...Object.entries(fields).flat(),
      ];
      // The script's answer; 'over-storage <bytes>' leaves the bytes with the caller.
      const admissionOf = (answer: unknown): Admission => {
        const text = String(answer);
        if (!text.startsWith('over-storage ')) return text as Admission;
        if (admission?.storage) admission.storage.usedBytes = Number(text.slice('over-storage '.length));
        return 'over-storage';
      };
      if (admission?.ready) await admission.ready;
      if (admission?.rate) admission.rate.counted = true;
      const oneServer = !isRedisCluster(redis);
      if (admitArgs && then && (await slotFree())) {
        // One server, admitted and enqueued: admission and record are one script (it spans the
        // tenant's and the run's slots, which one server allows), and the job is sent right behind
        // it on the same connection, so a submit costs one round trip. A refused admission writes
        // nothing of the run, but its job went out: the caller removes it (see `create`'s doc).
        const [admitted, queued] = sendTogether(redis, () => [
          ADMIT_AND_CREATE.runInOrder(redis, [...admitKeys, ...runKeys], [...admitArgs, ...runArgs]).then(
            admissionOf,
          ),
          then(),
        ]);
        admitted.catch(() => undefined);
        queued.catch(() => undefined);
        const answer = await admitted;
        if (answer === 'created') await queued;
        else await queued.catch(() => undefined);
        return answer;
      }
      // Tenant half first, awaited: a record never exists without its in-flight entry, so every
      // run the sweep cannot see was never acknowledged (see the header for the recovery path).
      if (admitArgs) {
        const admitted = admissionOf(await ADMIT_TENANT.run(redis, admitKeys, admitArgs));
        if (admitted !== 'created') return admitted;
      } else {
        await CREATE_TENANT.run(redis, [...tenantKeys, ...indexKeys], [run.id, run.createdAt, ...indexArgs]);
      }
      if (!then || !oneServer) {
        await CREATE_RUN.run(redis, runKeys, runArgs);
        await then?.();
        return 'created';
      }
      // One server (standalone, sentinel): it runs a connection's commands in the order they were
      // sent, so what `then` sends behind the record (the run's job) executes after the record is
      // written, without a round trip in between (the runner cannot find the job before the
      // record). A Cluster puts them on different nodes: there the record's reply is awaited first.
      // Should the record's write fail, its job finds no record and is dropped by the runner, and
      // the recovery loop's in-flight walk removes the in-flight entry; the submit answers the error.
      const stored = CREATE_RUN.runInOrder(redis, runKeys, runArgs);
      stored.catch(() => undefined);
      await Promise.all([stored, then()]);
      return 'created';
    },

    async get(id: string): Promise<StoredRun | null> {
      return fromHash(await redis.hgetall(keys.run(id)));
    },

    /** The run's status alone (null: no record), without opening the sealed fields. */
    async status(id: string): Promise<RunStatus | null> {
      return (await redis.hget(keys.run(id), 'status')) as RunStatus | null;
    },

    /** A run from its record's fields as read from Redis (null: no record). */
    fromHash,

    /** Moves a run to Running or Waiting unless it already ended. */
    async setStatus(
      run: { id: string; tenant: string },
      status: 'Running' | 'Waiting',
      data: Record<string, unknown> = {},
    ) {
      return transition(run, { status }, { type: 'status', data: { status, ...data } });
    },

    /** Ends a run. False when it had already ended (the first final status stands). */
    async finish(
      run: { id: string; tenant: string; pushEnd?: boolean; lease?: RunLease },
      end: {
        status: 'Completed' | 'Failed' | 'Cancelled';
        result: RunResult;
        text: string;
        kind?: string;
        timings?: RunTimings;
        /** What the run used, for its tenant's usage of the day (output bytes default to `text`'s). */
        usage?: RunUsage;
        /**
         * The caller executed the run's attempt and sent no binding call in it: when no other
         * attempt began, the pushed end's journal is known without reading it (includes/finish-run.lua).
         */
        sentNoCall?: boolean;
        /**
         * Told whether this end was the one written, once it is known: an end handed to the
         * worker's completion (`RunLease.deferEnd`) is written after `finish` returns.
         */
        onEnded?: (ended: boolean) => void;
      },
    ): Promise<boolean> {
      const told = (ended: boolean): boolean => {
        end.onEnded?.(ended);
        return ended;
      };
      const fields: Record<string, string> = {
        status: end.status,
        result: seal(end.result),
        kind: end.kind ?? 'none',
      };
      // The output once: the text's copy of the printed lines becomes a reference (stored-text.ts).
      const ref = textRefOf(end.text, end.result);
      if (ref) fields.textRef = seal(ref);
      else fields.text = sealer.seal(end.text);
      // Rides in the same script call as the end: stage timings cost no extra round trip.
      if (end.timings) fields.timings = JSON.stringify(end.timings);
      // The tenant half of the end (includes/finish-tenant.lua) leaves the in-flight set and
      // records the end in the tenant's index and usage, once, with the status the record kept.
      // Removing the in-flight entry is right whoever ended the run, and an entry left by a crash
      // in between (a Cluster: two scripts) is dropped by the recovery loop's in-flight walk (the
      // record is final).
      const usage = { outputBytes: Buffer.byteLength(end.text), ...end.usage };
      const tenant = finishTenantCall(run.tenant, keys.inFlight(run.tenant), {
        id: run.id,
        status: end.status,
        endedAt: Date.now(),
        kind: end.kind ?? 'none',
        usage,
      });
      // Bytes the end stored count against the tenant's share of Redis (storage-quota).
      const bytes = Object.values(fields).reduce((n, v) => n + v.length, 0);
      const event = { type: 'end', data: { status: end.status } };
      const sealedEvent = sealStatus(end.status);
      if (await slotFree()) {
        // One server: the final status, the tenant half and the bytes in one script (it spans the
        // run's and the tenant's slots); the tenant half copies the status the record kept,
        // whichever end won a race.
        const charge = storedBytes.chargeArgs(run.tenant, bytes);
        const flat = Object.entries({ ...fields, updatedAt: String(Date.now()) }).flat();
        const endKeys = [
          keys.run(run.id),
          keys.runEvents(run.id),
          journalKeys().journal(run.id),
          ...tenant.keys,
          charge.key,
        ];
        const endArgs = [
          run.id,
          channels.runEvents,
          event.type,
          sealedEvent,
          maxEvents,
          retention,
          run.pushEnd ? (end.sentNoCall ? '2' : '1') : '0',
          ...tenant.args,
          ...charge.args,
        ];
        const lease = run.lease?.held() ? run.lease : undefined;
        if (!lease) return told((await FINISH_RUN.run(redis, endKeys, [...endArgs, ...flat])) === 1);
        // The runner holding the run's slot lease gives it back in the same script (whichever end
        // won), and learns which deferred job the freed slot went to.
        const release = releaseCall(lease);
        // Only an end whose caller learns its answer later (`onEnded`) is handed over.
        const deferred =
          end.onEnded &&
          lease.deferEnd?.([...endKeys, ...release.keys], [...endArgs, ...release.args, ...flat]);
        if (deferred) {
          // The worker's completion writes the end (and its wake-up) first in its own script; the
          // runner is done with the lease now, the deferred job the slot goes to follows.
          lease.released(undefined);
          // `true`: handed over; whether it was the end written goes to `onEnded` (a call that
          // failed in every way leaves the run to its job's recovery, as a failed end script does).
          void deferred.then(
            (answer) => {
              const [res, nextJob, nextTenant] = answer as [number, string | undefined, string | undefined];
              if (nextJob && nextTenant) lease.released({ jobId: nextJob, tenant: nextTenant });
              told(res === 1);
            },
            () => undefined,
          );
          return true;
        }
        const [res, nextJob, nextTenant] = (await FINISH_RUN_RELEASE.run(
          redis,
          [...endKeys, ...release.keys],
          [...endArgs, ...release.args, ...flat],
        )) as [number, string | undefined, string | undefined];
        lease.released(nextJob && nextTenant ? { jobId: nextJob, tenant: nextTenant } : undefined);
        return told(res === 1);
      }
      // A Cluster: the halves are on two nodes; the tenant half follows the record's answer, so
      // only the end that won counts in the index.
      const ended = await transition(run, fields, event);
      if (!ended) tenant.args[1] = '';
      await Promise.all([
        FINISH_TENANT.run(redis, tenant.keys, tenant.args),
        storedBytes.charge(run.tenant, bytes).catch(() => undefined),
      ]);
      return told(ended);
    },

    async requestCancel(id: string): Promise<void> {
      await redis.multi().hset(keys.run(id), 'cancelRequested', '1').publish(channels.cancel, id).exec();
    },

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
        .xadd(keys.runEvents(runId), 'MAXLEN', '~', maxEvents, '*', 'type', type, 'data', seal(data))
        .publish(tag ? channels.runProgress : channels.runEvents, tag ? `${runId} ${tag}` : runId)
        .exec();
      return String(res?.[0]?.[1] ?? '');
    },

    /**
     * A binding call's `call` event (call-event.ts), for the journal's `complete` step to append
     * with the outcome: stream, sealed data, the wake-up tagged `call` on the progress channel
     * (SSE readers wake for it; it ends no `Prefer: wait`).
     */
    callEvent(runId: string, data: Record<string, unknown>): CompletionEvent {
      return {
        streamKey: keys.runEvents(runId),
        maxLen: Number(maxEvents),
        type: 'call',
        sealedData: seal(data),
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
      return rows.map(([id, f]) => {
        const m: Record<string, string> = {};
        for (let i = 0; i + 1 < f.length; i += 2) m[f[i]!] = f[i + 1]!;
        const data = open<Record<string, unknown>>(m.data) ?? {};
        // An attempt's start carries its number beside the sealed data (journal.beginAttempt).
        if (m.attempt !== undefined) data.attempt = Number(m.attempt);
        return { id, type: m.type ?? 'unknown', data };
      });
    },

    /** Run ids of a session, oldest first, from `cursor` (exclusive createdAt:id). */
    /**
     * Run ids of a session, oldest first. The cursor is `<createdAt>:<id>` of the last item seen, so
     * pages stay stable while runs are added or pruned.
     */
    async listSession(tenant: string, session: string, cursor: string | undefined, limit: number) {
      const key = keys.sessionRuns(tenant, session);
      const m = cursor ? /^(\d+):(.+)$/.exec(cursor) : null;
      const min = m ? m[1]! : '-inf';
      const rows = await redis.zrangebyscore(key, min, '+inf', 'WITHSCORES', 'LIMIT', 0, limit + 100);
      const items: Array<{ id: string; score: string }> = [];
      for (let i = 0; i + 1 < rows.length; i += 2) {
        const id = rows[i]!;
        const score = rows[i + 1]!;
        // Same-score members come in id order: skip up to and including the cursor's id.
        if (m && score === m[1] && id <= m[2]!) continue;
        items.push({ id, score });
      }
      const page = items.slice(0, limit);
      const last = page.at(-1);
      return {
        ids: page.map((x) => x.id),
        next: items.length > limit && last ? `${last.score}:${last.id}` : null,
      };
    },

    /**
     * The session's index from `since` (a score, exclusive of nothing: `-inf` for all) on, oldest
     * first, or with `latest` its newest `latest` entries, oldest first.
     */
    async sessionEntries(
      tenant: string,
      session: string,
      from: { since: string } | { latest: number },
    ): Promise<Array<{ id: string; score: string }>> {
      const key = keys.sessionRuns(tenant, session);
      const rows =
        'latest' in from
          ? await redis.zrevrange(key, 0, from.latest - 1, 'WITHSCORES')
          : await redis.zrangebyscore(key, from.since, '+inf', 'WITHSCORES');
      const out: Array<{ id: string; score: string }> = [];
      for (let i = 0; i + 1 < rows.length; i += 2) out.push({ id: rows[i]!, score: rows[i + 1]! });
      return 'latest' in from ? out.reverse() : out;
    },

    /** Drops a run from its session's index (its record is past retention). */
    async forgetSessionRun(tenant: string, session: string, id: string): Promise<void> {
      await redis.zrem(keys.sessionRuns(tenant, session), id);
    },

    inFlightCount,

    /**
     * Stores `value` under an Idempotency-Key (`key`, its Redis key) unless it holds one: true when
     * this request took it; false with what the key holds.
     */
    async claimIdempotency(
      key: string,
      value: string,
      ttlSeconds: number,
    ): Promise<{ taken: true } | { taken: false; held: string | null }> {
      if ((await redis.set(key, value, 'EX', ttlSeconds, 'NX')) === 'OK') return { taken: true };
      return { taken: false, held: await redis.get(key) };
    },

    takeOverIdempotency,

    releaseIdempotency,

    /**
     * Counts a skill in the tenant's in-flight quota until `releaseSkill` (or `ttlMs`, if its
     * gateway dies). One script on the tenant's slot counts runs and skills and reserves, so a
     * parallel burst of skills lets exactly the free places through. False, and nothing kept, when
     * the tenant is at `limit`.
     */
    async reserveSkill(tenant: string, skillId: string, ttlMs: number, limit: number): Promise<boolean> {
      const res = await RESERVE_SKILL.run(
        redis,
        [keys.skillsInFlight(tenant), keys.inFlight(tenant)],
        [skillId, Date.now(), ttlMs, limit, Math.max(ttlMs * 2, 3_600_000)],
      );
      return res === 1;
    },

    async releaseSkill(tenant: string, skillId: string): Promise<void> {
      await redis.zrem(keys.skillsInFlight(tenant), skillId);
    },
  };
}

export type RunStore = ReturnType<typeof createRunStore>;
