/**
 * A mode's worker (runner.ts): its connection, ParkingWorker (with its event handlers) and Queue,
 * made at start and replaced whole when the pick-up watchdog (pickup-watchdog.ts) restarts it.
 */

import { hostname } from 'node:os';
import { createRedis, type Redis, readRepliesFast } from '@islet/core';
import { QUEUE_PREFIX, runQueueName, type SandboxMode } from '@islet/protocol';
import { handOffFixedTerms, jobRunId, liveChannelOf, type RunJobData } from '@islet/runs';
import { Queue } from 'bullmq';
import { handOffOf } from './handoff-store.ts';
import { ParkingWorker } from './parking-worker.ts';
import { HandBackError } from './run-executor.ts';
import { processModeJob } from './run-processing.ts';
import { gateFor, type ModeWorker, type RunnerContext } from './runner-context.ts';
import type { RunnerRecovery } from './runner-recovery.ts';
import { noteDeferral } from './tenant-slot.ts';

/**
 * How long a restart waits for the old worker's `close(true)`: a worker that stopped fetching may
 * also never finish closing, and the restart must not wait on the very thing that is stuck.
 */
const WORKER_CLOSE_TIMEOUT_MS = 3000;

/** A mode's connection, Worker (with its event handlers) and Queue; used at start and by restarts. */
export function createModeWorker(
  ctx: RunnerContext,
  recovery: Pick<RunnerRecovery, 'endFailed'>,
  mode: SandboxMode,
): ModeWorker {
  const { config, executor, logger, modeWorkers } = ctx;
  const connection = createRedis(config);
  // Its replies (the fetch's, the end's script replies) read with no stream push or tick (core's
  // redis-direct-read.ts); so are the blocking pop's, on BullMQ's duplicate of it, below.
  // Text replies parsed as text, no Buffer a value first (core's redis-text-replies.ts).
  readRepliesFast(connection);
  const gate = gateFor(ctx, mode);
  const worker: ParkingWorker<RunJobData> = new ParkingWorker<RunJobData>(
    runQueueName(mode),
    (job, token) => processModeJob(ctx, mode, job, token, worker),
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
  // Made (and connecting) in the Worker's constructor: switched before its first socket connects.
  const blocking = blockingClientOf(worker);
  if (blocking) readRepliesFast(blocking);
  const fairShare = ctx.share;
  const fetchedStart = executor.fetchedStart;
  // On one server with the fair share on, a fetch also takes a run's lease and begins its
  // attempt (fetch-start-store.ts): the pick-up is one script call.
  if (fairShare && fetchedStart) {
    worker.fetchStart = {
      on: () => fairShare.startsInFetch(),
      start: () => fetchedStart(fairShare.leaseTerms(mode)),
      giveBack: (tenant, jobId) => fairShare.release(mode, tenant, jobId),
      // A refused job is moved to delayed by the fetch's own script, which fetches the next job in
      // its place: no slot holds a job it may not run (test/bench/README.md, round 26, `fair-fetch`).
      deferMs: config.ISLET_TENANT_SHARE_RECHECK_MS,
      moved: (jobs) => {
        for (const { jobId, tenant, limit, swapped } of jobs) {
          noteDeferral(ctx, mode, { jobId, tenant, limit });
          fairShare.movedInFetch(mode, tenant, swapped);
        }
      },
    };
    // And while idle, a submit may do that fetch for it (handoff-store.ts).
    if (config.ISLET_IDLE_HANDOFF === 'on') {
      const handOff = handOffOf(worker);
      // Held while the worker lives: a gateway checking liveness (ISLET_HANDOFF_LIVE_CHECK) hands
      // nothing to its registration once this runner is gone (@islet/runs handoff-live.ts).
      ctx.live?.hold(liveChannelOf(handOff.keys[2]));
      worker.enableHandOff({
        ...handOff,
        giveBack: (tenant, jobId) => fairShare.release(mode, tenant, jobId),
        // Registrations without the names a submit's script holds (@islet/runs handoff-terms.ts):
        // read since 9ec25e04, written by default since the release after it (`off`: the full form).
        ...(config.ISLET_HANDOFF_COMPACT_TERMS === 'on'
          ? { compact: handOffFixedTerms(worker.keys, mode) }
          : {}),
        ...(config.ISLET_HANDOFF_REFUSE_ON_MARKER === 'on' ? { refuseOnMarker: true } : {}),
        // The take-back after a pop that brought no hand-off goes with the worker's fetch (round 49
        // `fetch-takeback`): the runner's own script; a hand-off by either release's gateway is read.
        fuseTakeBack: true,
      });
    }
  }
  worker.on('error', (err) => logger.warn({ err: err.message, mode }, 'worker error'));
  worker.on('failed', (job, err) => {
    if (!job) return;
    const exhausted = job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/i.test(err.message);
    logger.warn(
      { runId: jobRunId(job), err: err.message, attemptsMade: job.attemptsMade, exhausted },
      'job failed',
    );
    if (exhausted && !job.data.skill && !(err instanceof HandBackError))
      void recovery.endFailed(jobRunId(job), mode, err.message);
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
export async function restartModeWorker(
  ctx: RunnerContext,
  recovery: Pick<RunnerRecovery, 'endFailed'>,
  mode: SandboxMode,
): Promise<void> {
  const { logger } = ctx;
  const old = ctx.modeWorkers.get(mode);
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
  // Its registrations are gone with its close: its live channel too (a no-op where none was held).
  ctx.live?.drop(liveChannelOf(handOffOf(old.worker).keys[2]));
  // A worker made once the close began would be one the close never closes, taking jobs.
  if (!ctx.stopping) createModeWorker(ctx, recovery, mode);
}

/**
 * The ioredis client of `worker`'s blocking connection (BullMQ's duplicate of the one it was given,
 * behind its client proxy, which forwards `on`, `status` and `stream` to it); undefined when this
 * BullMQ keeps it elsewhere. Exported for tests.
 */
export function blockingClientOf(worker: object): Redis | undefined {
  const client = (worker as { blockingConnection?: { _client?: unknown } }).blockingConnection?._client;
  return client !== null && typeof client === 'object' && typeof (client as Redis).on === 'function'
    ? (client as Redis)
    : undefined;
}
