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
 *
 * What the scripts are called with (the record's fields, a create's admission KEYS/ARGV, an end's
 * fields) is built in run-store-args.ts; the reads are run-reads.ts, a tenant's runs tenant-runs.ts,
 * the transitions apart from the end (`transition`, `setStatus`, `requestCancel`) run-transitions.ts,
 * the status event seals status-seals.ts.
 */

import { channels, isRedisCluster, keys, type Sealer, sendTogether, slotFreeCheck } from '@islet/core';
import type { RunResult } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { type AdmissionRide, rideAdmission } from './admitted-add.ts';
import { journalKeys } from './keys.ts';
import { type RunLease, releaseCall } from './lease-scripts.ts';
import { foldAfterEnd } from './run-index.ts';
import { FINISH_TENANT_CHARGE } from './run-index-scripts.ts';
import { finishTenantCall, indexCreateArgs, type RunUsage, runIndexKeys } from './run-index-writes.ts';
import { createRunReads } from './run-reads.ts';
import {
  admissionAnswer,
  admitCall,
  endFields,
  endModeArg,
  pushArg,
  recordFields,
  summaryOf,
  tenantNames,
} from './run-store-args.ts';
import {
  ADMIT_AND_CREATE,
  ADMIT_TENANT,
  CREATE_RUN,
  CREATE_TENANT,
  FINISH_RUN,
  FINISH_RUN_RELEASE,
} from './run-store-scripts.ts';
import {
  type Admission,
  type CreateAdmission,
  DEFAULT_WRITE_FORMAT,
  type RunStoreOptions,
  type RunTimings,
  type StoredRun,
} from './run-store-types.ts';
import { createRunTransitions } from './run-transitions.ts';
import { statusSeals } from './status-seals.ts';
import { createTenantBytesStore } from './tenant-bytes-store.ts';
import { createTenantRuns } from './tenant-runs.ts';

export type {
  AdmissionRateCount,
  AdmissionStorage,
  BindingSpec,
  RunLimitsSnapshot,
  RunTimings,
  StoredRun,
  WriteFormat,
} from './run-store-types.ts';
export { DEFAULT_WRITE_FORMAT } from './run-store-types.ts';

const DEFAULT_MAX_EVENTS_PER_RUN = 2000;
/** The journal's and decisions' keys with their default prefix, the one the gateway and runner use. */
const RUN_KEYS = journalKeys();

export function createRunStore(redis: Redis, sealer: Sealer, options: RunStoreOptions = {}) {
  const maxEvents = String(options.maxEventsPerRun ?? DEFAULT_MAX_EVENTS_PER_RUN);
  const retention = String(options.retentionSeconds ?? 7 * 24 * 3600);
  // The record's format written at a create and an end (sealed-fields.ts); both are read.
  const writeFormat = options.writeFormat ?? DEFAULT_WRITE_FORMAT;
  const stageTimings = options.stageTimings ?? true;
  // A run's end is counted in its tenant's stored bytes (tenant-bytes-store.ts) as it is written.
  const storedBytes = createTenantBytesStore(redis, { retentionSeconds: Number(retention) });
  const seal = (v: unknown) => sealer.seal(JSON.stringify(v));
  const sealStatus = statusSeals(seal);
  const eventSealer = options.eventSealer;
  const sealEvent = eventSealer ? (v: unknown) => eventSealer.seal(JSON.stringify(v)) : seal;
  const endSealer = options.endSealer ?? sealer;
  const sealEndValue = endSealer === sealer ? seal : (v: unknown) => endSealer.seal(JSON.stringify(v));
  const reads = createRunReads(redis, sealer, {
    maxEvents,
    sealEvent,
    sealStatus,
    callOneSeal: options.callOneSeal === true,
    endSealer,
  });
  const tenantRuns = createTenantRuns(redis);
  const { transition, setStatus, requestCancel } = createRunTransitions(redis, {
    maxEvents,
    retention,
    seal,
  });

  const slotFree = slotFreeCheck(redis);

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
     * `then` is told whether the admission counted the job in its pool's queued counts
     * (`countQueued`, one server: in the same script, before the job's add). With `carriesAdd` (one
     * server) `then` also gets an `AdmissionRide` and sends the admission with its add (one script:
     * a refused admission adds and counts nothing) or alone before it (admitted-add.ts).
     */
    async create(
      run: StoredRun,
      admission?: CreateAdmission,
      then?: (counted: boolean, ride?: AdmissionRide) => Promise<unknown>,
    ): Promise<Admission> {
      // The record's and the summary's description: one plaintext, sealed once for both.
      const description = sealer.seal(run.description);
      const fields = recordFields(run, sealer, seal, description, writeFormat);
      // The tenant's run index is written in the same tenant-half script (run-index.ts).
      const ik = runIndexKeys(run.tenant);
      const indexKeys = [ik.pending, ik.summaries, ik.ended, ik.sessions, ik.sessionStats, ik.feed];
      const indexArgs = indexCreateArgs(
        run.tenant,
        summaryOf(run, description),
        Number(retention),
        // Format 2 prunes from the run's creation (the entry then carries no `n`): a few ms earlier
        // than the script's now, against a retention of days.
        writeFormat === '2' ? run.createdAt : Date.now(),
        writeFormat,
      );
      // The session's runs key, made once for its two uses (a key and the wake-up's argument).
      const sessionRuns = keys.sessionRuns(run.tenant, run.session);
      const tenantKeys = [tenantNames(run.tenant).inFlight, sessionRuns];
      // Not touched without bytes to count (a counter in the tenant's slot all the same). The
      // counter charged is the newest of those the storage check sums (one `now` for both).
      const chargedAt = Date.now();
      const charge = storedBytes.chargeArgs(run.tenant, admission?.storedBytes ?? 0, chargedAt);
      const usageKeys = storedBytes.usageKeys(run.tenant, chargedAt);
      const { admitKeys, admitArgs } = admitCall(run, admission, {
        tenantKeys,
        indexKeys,
        indexArgs,
        charge,
        usageKeys,
      });
      const runKeys = [keys.run(run.id), keys.runEvents(run.id)];
      const runArgs: (string | number)[] = [
        channels.sessionRuns,
        sessionRuns,
        maxEvents,
        sealStatus(run.status),
      ];
      // The fields as name, value pairs (no `Object.entries(…).flat()`: a pair array a field, then
      // their copy; round 37 `submit-gw`).
      for (const name in fields) runArgs.push(name, fields[name] as string);
      const admissionOf = (answer: unknown) => admissionAnswer(answer, admission);
      if (admission?.ready) await admission.ready;
      if (admission?.rate) admission.rate.counted = true;
      const oneServer = !isRedisCluster(redis);
      if (admitArgs && then && (await slotFree())) {
        // One server, admitted and enqueued: admission and record are one script (it spans the
        // tenant's and the run's slots, which one server allows), and the job is sent right behind
        // it on the same connection, so a submit costs one round trip. A refused admission writes
        // nothing of the run, but its job went out: the caller removes it (see `create`'s doc).
        // With fair share on, the job's queued count rides in the script too (KEYS[24]), counted
        // whatever the answer, as the caller's own HINCRBY was: one command less a submit.
        const counted = admission?.countQueued === true;
        if (admission?.carriesAdd) {
          // The job's add carries the admission (admitted-add.ts): one script, sent as EVALSHA.
          const queuedKey = counted ? keys.poolQueued(run.mode) : undefined;
          // The fields' names in order: the script holds them in its text, sent their values alone.
          const names = Object.keys(fields);
          const ridden = await rideAdmission(
            redis,
            admitKeys.concat(runKeys),
            queuedKey,
            admitArgs.concat(runArgs),
            then,
            { at: admitArgs.length + 4, layout: { names, id: names.join(',') } },
          );
          ridden.queued.catch(() => undefined);
          const answer = admissionOf(ridden.answer);
          if (answer === 'created') await ridden.queued;
          return answer;
        }
        const createKeys = [...admitKeys, ...runKeys, ...(counted ? [keys.poolQueued(run.mode)] : [])];
        const [admitted, queued] = sendTogether(redis, () => [
          ADMIT_AND_CREATE.runInOrder(redis, createKeys, [...admitArgs, ...runArgs]).then(admissionOf),
          then(counted),
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
        await then?.(false);
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
      await Promise.all([stored, then(false)]);
      return 'created';
    },

    ...reads,

    /** Ends a run. False when it had already ended (the first final status stands). */
    async finish(
      run: { id: string; tenant: string; pushEnd?: boolean; lease?: RunLease },
      end: {
        status: 'Completed' | 'Failed' | 'Cancelled';
        result: RunResult;
        text: string;
        /** `text` is a Completed result's own (sealed-fields.ts `sealEnded`): not rendered again. */
        textIsResult?: boolean;
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
         * The caller knows the run has no decisions (the runner: its first plain attempt, no call
         * sent, no wider access asked): the end sends no EXPIRE for the decisions hash (round 48,
         * `endModeArg`). Absent: it may have some, and the end expires them.
         */
        noDecisions?: boolean;
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
      const fields = endFields(
        run,
        // Copied without its stamps only when it has any (a runner with stamps off gives none).
        stageTimings || end.timings === undefined ? end : { ...end, timings: undefined },
        endSealer,
        sealEndValue,
        writeFormat,
      );
      // The tenant half of the end (includes/finish-tenant.lua) leaves the in-flight set and
      // records the end in the tenant's index and usage, once, with the status the record kept.
      // Removing the in-flight entry is right whoever ended the run, and an entry left by a crash
      // in between (a Cluster: two scripts) is dropped by the recovery loop's in-flight walk (the
      // record is final).
      const usage = { outputBytes: Buffer.byteLength(end.text), ...end.usage };
      const tenant = finishTenantCall(
        run.tenant,
        tenantNames(run.tenant).inFlight,
        {
          id: run.id,
          status: end.status,
          endedAt: Date.now(),
          kind: end.kind ?? 'none',
          usage,
        },
        writeFormat,
      );
      // Bytes the end stored count against the tenant's share of Redis (storage-quota); the fields
      // as the script's field-value pairs, `updatedAt` last, in the same pass (not
      // `Object.entries(…).flat()`: ~10 µs of cold builtins a run on the runner's path from the
      // host's `done` to the end's write, test/bench/README.md round 31 `runner-end`).
      let bytes = 0;
      const flat: string[] = [];
      for (const name in fields) {
        const value = fields[name] as string;
        bytes += value.length;
        flat.push(name, value);
      }
      flat.push('updatedAt', String(Date.now()));
      const event = { type: 'end', data: { status: end.status } };
      const sealedEvent = sealStatus(end.status);
      if (await slotFree()) {
        // One server: the final status, the tenant half and the bytes in one script (it spans the
        // run's and the tenant's slots); the tenant half copies the status the record kept,
        // whichever end won a race.
        const charge = storedBytes.chargeArgs(run.tenant, bytes);
        // Joined by `concat` (one copy each), not spread: an array literal's spread in code V8 has
        // not optimized walks each array through its iterator, a result object an element (~3.4 KB
        // a run's end of the runner's garbage, test/bench/README.md round 37 `end-spreads`). The
        // same keys and arguments, in the same order. The run's decisions last (finish-run-14's
        // KEYS[14], round 48): expired with its record at the end.
        const endKeys = [keys.run(run.id), keys.runEvents(run.id), RUN_KEYS.journal(run.id)].concat(
          tenant.keys,
          charge.key,
          RUN_KEYS.decisions(run.id),
        );
        const endArgs = (
          [
            run.id,
            channels.runEvents,
            event.type,
            sealedEvent,
            maxEvents,
            retention,
            endModeArg(pushArg(run.pushEnd, end.sentNoCall, writeFormat), end.noDecisions),
          ] as (string | number)[]
        ).concat(tenant.args, charge.args);
        const lease = run.lease?.held() ? run.lease : undefined;
        // An answer's last element 1: the tenant's pending list is due its fold, sent after the
        // answer (run-index.ts `foldAfterEnd`), not in the end's script.
        if (!lease) {
          const reply = (await FINISH_RUN.run(redis, endKeys, endArgs.concat(flat))) as
            | number
            | [number, number];
          if (typeof reply === 'number') return told(reply === 1);
          const ended = told(reply[0] === 1);
          foldAfterEnd(redis, run.tenant);
          return ended;
        }
        // The runner holding the run's slot lease gives it back in the same script (whichever end
        // won), and learns which deferred job the freed slot went to.
        const release = releaseCall(lease);
        // Made once for the hand-over and the script's own call: a hand-over that declines keeps
        // nothing of them (`RunLease.deferEnd`), so the script's call sends these very lists.
        const releaseKeys = endKeys.concat(release.keys);
        const releaseArgs = endArgs.concat(release.args, flat);
        // Only an end whose caller learns its answer later (`onEnded`) is handed over.
        const deferred = end.onEnded && lease.deferEnd?.(releaseKeys, releaseArgs, end.status);
        if (deferred) {
          // The worker's completion writes the end (and its wake-up) first in its own script; the
          // runner is done with the lease now, the deferred job the slot goes to follows.
          lease.released(undefined);
          // `true`: handed over; whether it was the end written goes to `onEnded` (a call that
          // failed in every way leaves the run to its job's recovery, as a failed end script does).
          void deferred.then(
            (answer) => {
              // Read by index, not destructured (array destructuring walks the iterator).
              const reply = answer as [number, string | null, string | null, number?];
              const nextJob = reply[1];
              const nextTenant = reply[2];
              if (nextJob && nextTenant) lease.released({ jobId: nextJob, tenant: nextTenant });
              told(reply[0] === 1);
              if (reply[3] === 1) foldAfterEnd(redis, run.tenant);
            },
            () => undefined,
          );
          return true;
        }
        const reply = (await FINISH_RUN_RELEASE.run(redis, releaseKeys, releaseArgs)) as [
          number,
          string | null,
          string | null,
          number?,
        ];
        const nextJob = reply[1];
        const nextTenant = reply[2];
        lease.released(nextJob && nextTenant ? { jobId: nextJob, tenant: nextTenant } : undefined);
        const ended = told(reply[0] === 1);
        if (reply[3] === 1) foldAfterEnd(redis, run.tenant);
        return ended;
      }
      // A Cluster: the halves are on two nodes; the tenant half follows the record's answer, so
      // only the end that won counts in the index. The tenant half and the bytes charge share the
      // tenant's slot: one script (finish-tenant-charge-10), not two sent together (until round 52:
      // one command and one Redis message more a run); the bytes counted whoever won, as before.
      const ended = await transition(run, fields, event, end.noDecisions);
      if (!ended) tenant.args[1] = '';
      const charge = storedBytes.chargeArgs(run.tenant, bytes);
      const recorded = await FINISH_TENANT_CHARGE.run(
        redis,
        tenant.keys.concat(charge.key),
        (tenant.args as (string | number)[]).concat(charge.args),
      );
      const answer = told(ended);
      if (recorded === 2) foldAfterEnd(redis, run.tenant);
      return answer;
    },

    /** Moves a run to Running or Waiting unless it already ended (run-transitions.ts). */
    setStatus,

    requestCancel,

    ...tenantRuns,
  };
}

export type RunStore = ReturnType<typeof createRunStore>;
