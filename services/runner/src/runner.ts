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

import {
  channels,
  createRedis,
  type IsletConfig,
  type Logger,
  type Metrics,
  readRepliesFast,
} from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import type { FailedJobSource, RunJobData } from '@islet/runs';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createFairShare } from './fair-share.ts';
import { createModeWorker, restartModeWorker } from './mode-worker.ts';
import { OneSlotMap } from './one-slot-map.ts';
import { OneSlotSet } from './one-slot-set.ts';
import { createPickupWatchdog, type PickupWatchdog } from './pickup-watchdog.ts';
import type { RunExecutor } from './run-executor.ts';
import { abortRun, type RunnerContext } from './runner-context.ts';
import { createRunnerRecovery } from './runner-recovery.ts';
import type { SkillExecutor } from './skill-executor.ts';
import { promote } from './tenant-slot.ts';

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

export function createRunner(deps: RunnerDeps) {
  const { config, executor, metrics, logger } = deps;
  const ctx: RunnerContext = {
    config,
    executor,
    skills: deps.skills,
    metrics,
    logger,
    active: new OneSlotMap(),
    gates: new Map(),
    held: {},
    lastPickupAtMs: {},
    modeWorkers: new Map(),
    share: undefined,
    stopping: false,
    releasing: new OneSlotSet(),
  };
  const { active, held, lastPickupAtMs, modeWorkers, releasing } = ctx;
  const connections: Redis[] = [];
  let watchdog: PickupWatchdog | undefined;
  let subscriber: Redis | undefined;

  const recovery = createRunnerRecovery({
    executor,
    metrics,
    logger,
    intervalMs: config.ISLET_RUNNER_STALLED_INTERVAL_MS,
    queues: () => [...modeWorkers].map(([mode, m]): [SandboxMode, FailedJobSource] => [mode, m.queue]),
  });

  return {
    async start() {
      subscriber = createRedis(config);
      connections.push(subscriber);
      subscriber.on('message', (ch: string, runId: string) => {
        // Only the cancel channel carries messages (a live channel is held, never published to).
        if (ch !== channels.cancel) return;
        const ctl = active.get(runId);
        if (ctl) abortRun(ctl, 'cancel');
      });
      subscriber.on('error', (err) =>
        logger.warn({ err: err.message }, 'cancel subscriber connection error'),
      );
      await subscriber.subscribe(channels.cancel);
      // Each hand-off worker's live channel, held on this connection while the worker lives (a
      // failed subscribe only makes its registrations look dead: fetched for, never lost).
      const live = subscriber;
      ctx.live = {
        hold: (channel) => {
          live
            .subscribe(channel)
            .catch((err: Error) => logger.warn({ err: err.message }, 'live channel subscribe failed'));
        },
        drop: (channel) => {
          live.unsubscribe(channel).catch(() => undefined);
        },
      };
      const shareConnection = createRedis(config);
      // A run's lease and release replies read with no stream push or tick (core's redis-direct-read.ts).
      readRepliesFast(shareConnection);
      connections.push(shareConnection);
      shareConnection.on('error', (err) => logger.warn({ err: err.message }, 'fair-share connection error'));
      const share = (deps.createShare ?? createFairShare)({
        redis: shareConnection,
        config,
        logger,
        promote: (mode, jobId) => promote(ctx, mode, jobId),
        queuedJobs: async (mode) => {
          const counts = await modeWorkers.get(mode)?.queue.getJobCounts('wait', 'prioritized');
          return counts ? (counts.wait ?? 0) + (counts.prioritized ?? 0) : Number.NaN;
        },
      });
      ctx.share = share;
      await share.start(config.ISLET_RUNNER_MODES);
      for (const mode of config.ISLET_RUNNER_MODES) createModeWorker(ctx, recovery, mode);
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
          restart: (mode) => restartModeWorker(ctx, recovery, mode),
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
      ctx.stopping = true;
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
      await ctx.share?.close();
      await Promise.all(current.map((m) => m.queue.close().catch(() => undefined)));
      for (const c of [...connections, ...current.map((m) => m.connection)]) c.disconnect();
    },
    /** Tests only: the live worker of each mode (a restart replaces it). */
    workersForTest: (): ReadonlyMap<SandboxMode, Worker<RunJobData>> =>
      new Map([...modeWorkers].map(([mode, m]) => [mode, m.worker])),
  };
}

export type Runner = ReturnType<typeof createRunner>;
