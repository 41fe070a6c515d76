/**
 * A runner process: one BullMQ Worker per sandbox mode it serves, a cancel listener, metrics.
 *
 * Worker options (from config): `concurrency` = ISLET_RUNNER_CONCURRENCY (slots per mode);
 * `lockDuration` = ISLET_RUNNER_LOCK_DURATION_MS (default 30000; BullMQ renews it every half, and
 * the event loop is never blocked, so a live runner never loses a lock); `stalledInterval` =
 * ISLET_RUNNER_STALLED_INTERVAL_MS (default 15000: how soon a dead runner's job is taken back);
 * `maxStalledCount` = ISLET_RUNNER_MAX_STALLED_COUNT (default 3: then the run ends Unavailable).
 *
 * Every job (run or skill) first takes a slot lease in the pool (fair-share.ts); a job that must
 * wait (its tenant over its share while others wait) goes back to the queue delayed, without
 * spending an attempt. On one server a run's lease is taken in its attempt's start script and
 * given back in its end script (no round trip of its own); skills, and runs on a Cluster, take and
 * give it back in scripts of their own.
 *
 * Slots (slot-gate.ts) bound CPU work: a run whose binding call waits parks (call-parking.ts),
 * giving its slot and its tenant's lease back, so the worker holds up to slots +
 * ISLET_RUNNER_PARKED_MAX jobs but fetches only while a slot is free (parking-worker.ts).
 *
 * A pick-up watchdog (pickup-watchdog.ts, ISLET_RUNNER_PICKUP_WATCHDOG_MS) replaces a mode's
 * worker that holds no job while jobs wait (BullMQ workers can stop fetching without an error), so
 * each mode's worker, its connection and its Queue live in one replaceable record.
 */

import { hostname } from 'node:os';
import { channels, createRedis, type IsletConfig, type Logger, type Metrics } from '@islet/core';
import { QUEUE_PREFIX, runQueueName, type SandboxMode } from '@islet/protocol';
import type { FailedJobSource, RunJobData } from '@islet/runs';
import { DelayedError, type Job, Queue, type Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createFairShare, type FairShare, type JobLease } from './fair-share.ts';
import { handOffOf } from './handoff-store.ts';
import { ParkingWorker } from './parking-worker.ts';
import { createPickupWatchdog, type PickupWatchdog } from './pickup-watchdog.ts';
import { HandBackError, type RunExecutor } from './run-executor.ts';
import { RunSlot } from './run-slot.ts';
import { createRunnerRecovery } from './runner-recovery.ts';
import type { SkillExecutor } from './skill-executor.ts';
import { SlotGate } from './slot-gate.ts';

export interface RunnerDeps {
  config: IsletConfig;
  executor: RunExecutor;
  /** Runs `skill` jobs (run_code skill requests queued on the same mode queues). */
  skills?: SkillExecutor;
  metrics: Metrics;
  logger: Logger;
  /** The pool's fair share (tests wrap it); `createFairShare` by default. */
  createShare?: typeof createFairShare;
}

/**
 * How long a restart waits for the old worker's `close(true)`: a worker that stopped fetching may
 * also never finish closing, and the restart must not wait on the very thing that is stuck.
 */
const WORKER_CLOSE_TIMEOUT_MS = 3000;

/**
 * A running job's signals: `stop` is aborted with whichever of the other two is, first, with its
 * reason (what `AbortSignal.any` would give, without making a composite signal for every run).
 */
interface RunControls {
  cancel: AbortController;
  handBack: AbortController;
  stop: AbortController;
}

function abortRun(ctl: RunControls, which: 'cancel' | 'handBack'): void {
  ctl[which].abort();
  ctl.stop.abort(ctl[which].signal.reason);
}

/** One mode's BullMQ worker and Queue, on one connection; replaced whole by a restart. */
interface ModeWorker {
  connection: Redis;
  worker: ParkingWorker<RunJobData>;
  queue: Queue<RunJobData>;
}

export function createRunner(deps: RunnerDeps) {
  const { config, executor, metrics, logger } = deps;
  const active = new Map<string, RunControls>();
  const gates = new Map<SandboxMode, SlotGate>();
  /** Jobs inside process() per mode, deferred ones included: a worker holding any is never restarted. */
  const held: Partial<Record<SandboxMode, number>> = {};
  const lastPickupAtMs: Partial<Record<SandboxMode, number>> = {};
  const connections: Redis[] = [];
  const modeWorkers = new Map<SandboxMode, ModeWorker>();
  let watchdog: PickupWatchdog | undefined;
  let subscriber: Redis | undefined;
  let share: FairShare | undefined;
  /** The runner's close began: no worker is made any more (a restart in flight makes none). */
  let stopping = false;
  /** Lease releases still in flight (they never reject: a failed one is logged and lapses). */
  const releasing = new Set<Promise<void>>();

  /** Promotes a deferred job; true when it will run (promoted, or already back in the queue). */
  async function promote(mode: SandboxMode, jobId: string): Promise<boolean> {
    const job = await modeWorkers.get(mode)?.queue.getJob(jobId);
    if (!job) return false;
    // A job still active was deferred a moment ago and its runner has not moved it to the delayed
    // set yet: wait for the move rather than leave it to its recheck.
    for (let tries = 0; tries < 20; tries++) {
      if (
        await job.promote().then(
          () => true,
          () => false,
        )
      )
        return true;
      const state = await job.getState();
      if (state === 'waiting' || state === 'prioritized') return true;
      if (state !== 'active') return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return false;
  }

  /**
   * Runs `work` inside one of the tenant's slots of the pool, or sends the job back to the queue
   * (delayed, no attempt spent; it has not started) when the tenant already holds its share. On
   * one server a run's lease is taken by its attempt's start (`work` gets it, the executor passes
   * it on) and given back by its end; a skill's, or any run's on a Cluster, is taken here first.
   */
  async function withTenantSlot<T>(
    mode: SandboxMode,
    job: Job<RunJobData>,
    token: string | undefined,
    work: (lease?: JobLease) => Promise<T>,
    fetchedStart?: unknown,
  ): Promise<T> {
    const jobId = job.id ?? job.data.runId;
    if (!share || !token) return work();
    const defer = async (limit: number): Promise<never> => {
      metrics.shareDeferrals.inc({ mode });
      logger.debug(
        { jobId, tenant: job.data.tenant, mode, limit },
        'job deferred: it waits for a slot of the pool',
      );
      await job.moveToDelayed(Date.now() + config.ISLET_TENANT_SHARE_RECHECK_MS, token);
      throw new DelayedError();
    };
    // The fetch may have taken the lease and begun the attempt already (one server): the lease
    // then carries that answer to the attempt's start, which asks Redis nothing more.
    const lease = job.data.skill
      ? undefined
      : await share.runLease(mode, job.data.tenant, jobId, fetchedStart);
    if (!lease) {
      const { ok, limit } = await share.acquire(mode, job.data.tenant, jobId);
      if (!ok) return defer(limit);
    }
    // Nothing to give back when the run's end gave it back or its start refused it; a start that
    // never answered (its reply lost) may have taken it, and a release of nothing is harmless.
    const mustRelease = () => !lease?.answer || (lease.answer.ok && !lease.endReleased);
    let result: T;
    try {
      result = await work(lease);
    } catch (err) {
      // Thrown past the executor: given back before the slot frees (the processor's end), or this
      // worker's next fetch may take its lease on its own connection before Redis has the release
      // and read a full pool (a deferral under contention). A round trip on a failure only.
      if (mustRelease()) await share.release(mode, job.data.tenant, jobId);
      throw err;
    }
    // Not awaited: the job's completion (BullMQ's moveToCompleted, which fetches this slot's
    // next job) goes out with it instead of a round trip later. The next job's acquire follows
    // on the same connection, so Redis sees the release first; a slot the release leases to a
    // deferred job is reserved for it whichever job BullMQ hands this worker next.
    if (mustRelease()) {
      const released = share.release(mode, job.data.tenant, jobId);
      releasing.add(released);
      void released.finally(() => releasing.delete(released));
    }
    if (lease?.answer && !lease.answer.ok) return defer(lease.answer.limit);
    return result;
  }

  /** A mode's slots and parked runs; kept across worker restarts (the jobs they count outlive a worker). */
  function gateFor(mode: SandboxMode): SlotGate {
    let gate = gates.get(mode);
    if (!gate) {
      // The gauges are set when their value changes: the gate reports every take and end, and
      // a labelled gauge's set hashes its labels each time (parked counts rarely move).
      const last = { busy: -1, kept: -1, released: -1 };
      gate = new SlotGate({
        slots: config.ISLET_RUNNER_CONCURRENCY,
        parkedMax: config.ISLET_RUNNER_PARKED_MAX,
        isolatesMax: config.ISLET_RUNNER_PARKED_ISOLATES_MAX,
        onChange: (s) => {
          if (s.busy !== last.busy) {
            last.busy = s.busy;
            metrics.runnerSlots.set({ mode, state: 'busy' }, s.busy);
            metrics.runnerSlots.set(
              { mode, state: 'idle' },
              Math.max(0, config.ISLET_RUNNER_CONCURRENCY - s.busy),
            );
          }
          if (s.parkedWithIsolate !== last.kept) {
            last.kept = s.parkedWithIsolate;
            metrics.parkedRuns.set({ mode, isolate: 'kept' }, s.parkedWithIsolate);
          }
          if (s.parkedReleased !== last.released) {
            last.released = s.parkedReleased;
            metrics.parkedRuns.set({ mode, isolate: 'released' }, s.parkedReleased);
          }
        },
        onPark: () => metrics.parkings.inc({ mode, isolate: 'kept' }),
        onRelease: () => metrics.parkings.inc({ mode, isolate: 'released' }),
      });
      gates.set(mode, gate);
    }
    return gate;
  }

  /** A skill job holds a slot like a run; it is not cancellable and not handed back (not journaled). */
  async function processSkill(mode: SandboxMode, job: Job<RunJobData>) {
    const skill = job.data.skill;
    if (!skill || !deps.skills) throw new Error('this runner does not run skills');
    return deps.skills({
      id: job.data.runId,
      tenant: job.data.tenant,
      mode,
      enqueuedAtMs: job.data.enqueuedAtMs,
      skill,
    });
  }

  async function process(
    mode: SandboxMode,
    job: Job<RunJobData>,
    token: string | undefined,
    worker: ParkingWorker<RunJobData>,
  ) {
    const fetchedAtMs = performance.timeOrigin + performance.now();
    held[mode] = (held[mode] ?? 0) + 1;
    lastPickupAtMs[mode] = Date.now();
    const jobId = job.id ?? job.data.runId;
    const fairShare = share;
    const slot = new RunSlot(
      gateFor(mode),
      fairShare && token
        ? {
            release: () => fairShare.release(mode, job.data.tenant, jobId),
            reclaim: () => fairShare.reclaim(mode, job.data.tenant, jobId),
          }
        : undefined,
      (err) => logger.warn({ err: (err as Error).message, jobId }, 'fair-share lease of a parked run'),
    );
    // The fetch started the run (one server): its end goes with the job's completion, one script
    // call (end-complete-store.ts). The slot goes back once that call answered (the lease given
    // back), not when the processor returns nor when the call is sent: a job waiting for the slot
    // (one BullMQ fetched with a completion) takes its lease in its attempt's start, on the run
    // store's connection, which Redis may serve before the worker's; seeing this run's lease still
    // held, a full pool would defer it (see test/bench/README.md, round 17). A next job the
    // completion itself started gets the slot kept for it (ParkingWorker.deferEnd, round 19).
    let slotAfterEnd = false;
    try {
      const fetchedStart = worker.takeFetchedStart(jobId);
      await slot.take(token);
      const fuseEnd = fetchedStart !== undefined && !job.data.skill;
      return await withTenantSlot(
        mode,
        job,
        token,
        (lease) => {
          if (lease && fuseEnd)
            lease.deferEnd = (keys, args) => {
              const ended = worker.deferEnd(jobId, keys, args, slot.active ? token : undefined);
              if (ended) {
                slotAfterEnd = true;
                const free = () => slot.end();
                void ended.then(free, free);
              }
              return ended;
            };
          return job.data.skill
            ? processSkill(mode, job)
            : processRun(mode, job, token, slot, fetchedAtMs, lease);
        },
        fetchedStart,
      );
    } finally {
      if (!slotAfterEnd) slot.end();
      held[mode] = (held[mode] ?? 1) - 1;
    }
  }

  async function processRun(
    mode: SandboxMode,
    job: Job<RunJobData>,
    token: string | undefined,
    slot: RunSlot,
    fetchedAtMs: number,
    lease: JobLease | undefined,
  ) {
    const { runId } = job.data;
    const ctl: RunControls = {
      cancel: new AbortController(),
      handBack: new AbortController(),
      stop: new AbortController(),
    };
    active.set(runId, ctl);
    try {
      const result = await executor.execute({
        runId,
        mode,
        enqueuedAtMs: job.data.enqueuedAtMs,
        fetchedAtMs,
        cancel: ctl.cancel.signal,
        handBack: ctl.handBack.signal,
        stop: ctl.stop.signal,
        ...(config.ISLET_RUNNER_PARKED_MAX > 0 ? { slot } : {}),
        ...(lease ? { lease } : {}),
      });
      logger.debug({ runId, result, attemptsMade: job.attemptsMade }, 'job done');
      return result;
    } catch (err) {
      // Handing back is not a failure: put the job back (due at once) without spending an
      // attempt, so rolling restarts never use up a run's retries.
      if (err instanceof HandBackError && token) {
        await job.moveToDelayed(Date.now() + 50, token);
        throw new DelayedError();
      }
      throw err;
    } finally {
      active.delete(runId);
    }
  }

  const recovery = createRunnerRecovery({
    executor,
    metrics,
    logger,
    intervalMs: config.ISLET_RUNNER_STALLED_INTERVAL_MS,
    queues: () => [...modeWorkers].map(([mode, m]): [SandboxMode, FailedJobSource] => [mode, m.queue]),
  });

  /** A mode's connection, Worker (with its event handlers) and Queue; used at start and by restarts. */
  function createModeWorker(mode: SandboxMode): ModeWorker {
    const connection = createRedis(config);
    const gate = gateFor(mode);
    const worker: ParkingWorker<RunJobData> = new ParkingWorker<RunJobData>(
      runQueueName(mode),
      (job, token) => process(mode, job, token, worker),
      {
        connection,
        prefix: QUEUE_PREFIX,
        name: config.ISLET_RUNNER_NAME ?? hostname(),
        concurrency: gate.concurrency,
        lockDuration: config.ISLET_RUNNER_LOCK_DURATION_MS,
        stalledInterval: config.ISLET_RUNNER_STALLED_INTERVAL_MS,
        maxStalledCount: config.ISLET_RUNNER_MAX_STALLED_COUNT,
      },
    );
    worker.gate = gate;
    const fairShare = share;
    const fetchedStartArgs = executor.fetchedStartArgs;
    // On one server with the fair share on, a fetch also takes a run's lease and begins its
    // attempt (fetch-start-store.ts): the pick-up is one script call.
    if (fairShare && fetchedStartArgs) {
      worker.fetchStart = {
        on: () => fairShare.startsInFetch(),
        args: () => fetchedStartArgs(fairShare.leaseTerms(mode)),
        giveBack: (tenant, jobId) => fairShare.release(mode, tenant, jobId),
      };
      // And while idle, a submit may do that fetch for it (handoff-store.ts).
      if (config.ISLET_IDLE_HANDOFF === 'on')
        worker.enableHandOff({
          ...handOffOf(worker),
          giveBack: (tenant, jobId) => fairShare.release(mode, tenant, jobId),
        });
    }
    worker.on('error', (err) => logger.warn({ err: err.message, mode }, 'worker error'));
    worker.on('failed', (job, err) => {
      if (!job) return;
      const exhausted = job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/i.test(err.message);
      logger.warn(
        { runId: job.data.runId, err: err.message, attemptsMade: job.attemptsMade, exhausted },
        'job failed',
      );
      if (exhausted && !job.data.skill && !(err instanceof HandBackError))
        void recovery.endFailed(job.data.runId, mode, err.message);
    });
    worker.on('stalled', (jobId) => logger.warn({ jobId, mode }, 'job stalled; it will run again'));
    const queue = new Queue<RunJobData>(runQueueName(mode), { connection, prefix: QUEUE_PREFIX });
    const created = { connection, worker, queue };
    modeWorkers.set(mode, created);
    gate.wakeFetches();
    return created;
  }

  /**
   * Replaces a mode's worker that stopped fetching (the watchdog calls this only while it holds no
   * job). The old one is closed first, so it cannot take a job the new one also sees; forced,
   * since it has nothing to wait for, and bounded, since a stuck worker may never finish closing.
   * Its handlers stay attached: a late `error` event without a listener would crash the process.
   */
  async function restartModeWorker(mode: SandboxMode): Promise<void> {
    const old = modeWorkers.get(mode);
    if (!old) return;
    let timer: NodeJS.Timeout | undefined;
    const closed = Promise.all([
      old.worker
        .close(true)
        .catch((err: Error) => logger.warn({ mode, err: err.message }, 'old worker close failed')),
      old.queue.close().catch(() => undefined),
    ]).then(() => 'closed' as const);
    const late = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), WORKER_CLOSE_TIMEOUT_MS);
    });
    if ((await Promise.race([closed, late])) === 'timeout')
      logger.warn(
        { mode, timeoutMs: WORKER_CLOSE_TIMEOUT_MS },
        'old worker did not close in time; dropping it',
      );
    clearTimeout(timer);
    old.connection.disconnect();
    // A worker made once the close began would be one the close never closes, taking jobs.
    if (!stopping) createModeWorker(mode);
  }

  return {
    async start() {
      subscriber = createRedis(config);
      connections.push(subscriber);
      subscriber.on('message', (_ch: string, runId: string) => {
        const ctl = active.get(runId);
        if (ctl) abortRun(ctl, 'cancel');
      });
      subscriber.on('error', (err) =>
        logger.warn({ err: err.message }, 'cancel subscriber connection error'),
      );
      await subscriber.subscribe(channels.cancel);
      const shareConnection = createRedis(config);
      connections.push(shareConnection);
      shareConnection.on('error', (err) => logger.warn({ err: err.message }, 'fair-share connection error'));
      share = (deps.createShare ?? createFairShare)({
        redis: shareConnection,
        config,
        logger,
        promote,
        queuedJobs: async (mode) => {
          const counts = await modeWorkers.get(mode)?.queue.getJobCounts('wait', 'prioritized');
          return counts ? (counts.wait ?? 0) + (counts.prioritized ?? 0) : Number.NaN;
        },
      });
      await share.start(config.ISLET_RUNNER_MODES);
      for (const mode of config.ISLET_RUNNER_MODES) createModeWorker(mode);
      await Promise.all([...modeWorkers.values()].map((m) => m.worker.waitUntilReady()));
      recovery.start();
      if (config.ISLET_RUNNER_PICKUP_WATCHDOG_MS > 0) {
        watchdog = createPickupWatchdog({
          modes: config.ISLET_RUNNER_MODES,
          intervalMs: config.ISLET_RUNNER_PICKUP_WATCHDOG_MS,
          probe: (mode) => ({ held: held[mode] ?? 0, lastPickupAtMs: lastPickupAtMs[mode] }),
          countWaiting: async (mode) => {
            const queue = modeWorkers.get(mode)?.queue;
            if (!queue) return 0;
            const counts = await queue.getJobCounts('wait', 'prioritized');
            return (counts.wait ?? 0) + (counts.prioritized ?? 0);
          },
          restart: restartModeWorker,
          restarts: metrics.workerRestarts,
          logger,
        });
        watchdog.start();
      }
    },
    /** Runs this runner holds now. */
    activeRuns: () => [...active.keys()],
    /**
     * Graceful stop: take no new jobs, let running ones finish within `graceMs`, then hand the rest
     * back (their executions abort and the jobs return to the queue for another runner).
     */
    async close(graceMs = config.ISLET_RUNNER_SHUTDOWN_GRACE_MS) {
      // The grace counts from the stop request (as a pod's termination grace counts from its
      // SIGTERM), not from after a recovery pass or a watchdog probe in flight has ended: a slow
      // pass on a loaded node must not let runs go on past it.
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), graceMs).unref());
      stopping = true;
      await recovery.stop();
      // First, so no restart swaps a worker out from under the close below.
      await watchdog?.close();
      const current = [...modeWorkers.values()];
      const closing = Promise.all(current.map((m) => m.worker.close()));
      if ((await Promise.race([closing.then(() => 'closed' as const), timer])) === 'timeout') {
        logger.warn({ runs: [...active.keys()] }, 'shutdown grace over; handing running jobs back');
        for (const ctl of active.values()) abortRun(ctl, 'handBack');
        await closing;
      }
      await Promise.all(releasing);
      await share?.close();
      await Promise.all(current.map((m) => m.queue.close().catch(() => undefined)));
      for (const c of [...connections, ...current.map((m) => m.connection)]) c.disconnect();
    },
    /** Tests only: the live worker of each mode (a restart replaces it). */
    workersForTest: (): ReadonlyMap<SandboxMode, Worker<RunJobData>> =>
      new Map([...modeWorkers].map(([mode, m]) => [mode, m.worker])),
  };
}

export type Runner = ReturnType<typeof createRunner>;
