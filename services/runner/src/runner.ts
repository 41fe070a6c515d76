/**
 * A runner process: one BullMQ Worker per sandbox mode it serves, a cancel listener, metrics.
 *
 * Worker options (from config): `concurrency` = ISLET_RUNNER_CONCURRENCY (slots per mode);
 * `lockDuration` = ISLET_RUNNER_LOCK_DURATION_MS (default 30000; BullMQ renews it every half, and
 * the event loop is never blocked, so a live runner never loses a lock); `stalledInterval` =
 * ISLET_RUNNER_STALLED_INTERVAL_MS (default 15000: how soon a dead runner's job is taken back);
 * `maxStalledCount` = ISLET_RUNNER_MAX_STALLED_COUNT (default 3: then the run ends Unavailable).
 *
 * Every job (run or skill) first takes one of its tenant's slots in the pool (fair-share.ts); a
 * job over its tenant's share goes back to the queue delayed, without spending an attempt.
 */

import { hostname } from 'node:os';
import {
  channels,
  createRedis,
  type IsletConfig,
  type Logger,
  type Metrics,
  type RunJobData,
} from '@islet/core';
import { QUEUE_PREFIX, runQueueName, type SandboxMode } from '@islet/protocol';
import { DelayedError, type Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createFairShare, type FairShare } from './fair-share.ts';
import { HandBackError, type RunExecutor } from './run-executor.ts';
import type { SkillExecutor } from './skill-executor.ts';

export interface RunnerDeps {
  config: IsletConfig;
  executor: RunExecutor;
  /** Runs `skill` jobs (run_code skill requests queued on the same mode queues). */
  skills?: SkillExecutor;
  metrics: Metrics;
  logger: Logger;
}

export function createRunner(deps: RunnerDeps) {
  const { config, executor, metrics, logger } = deps;
  const active = new Map<string, { cancel: AbortController; handBack: AbortController }>();
  const busy: Record<string, number> = {};
  const connections: Redis[] = [];
  const workers: Worker<RunJobData>[] = [];
  const queues: Queue<RunJobData>[] = [];
  const givenUp = new Set<string>();
  const queueOf = new Map<SandboxMode, Queue<RunJobData>>();
  let sweepTimer: NodeJS.Timeout | undefined;
  let subscriber: Redis | undefined;
  let share: FairShare | undefined;

  /** Promotes a deferred job; false when it is not delayed any more (running, removed, ended). */
  async function promote(mode: SandboxMode, jobId: string): Promise<boolean> {
    const job = await queueOf.get(mode)?.getJob(jobId);
    if (!job) return false;
    return job.promote().then(
      () => true,
      () => false,
    );
  }

  /**
   * Runs `work` inside one of the tenant's slots of the pool, or sends the job back to the queue
   * (delayed, no attempt spent; it has not started) when the tenant already holds its share.
   */
  async function withTenantSlot<T>(
    mode: SandboxMode,
    job: Job<RunJobData>,
    token: string | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    const jobId = job.id ?? job.data.runId;
    if (!share || !token) return work();
    const { ok, limit } = await share.acquire(mode, job.data.tenant, jobId);
    if (!ok) {
      metrics.shareDeferrals.inc({ mode });
      logger.debug({ jobId, tenant: job.data.tenant, mode, limit }, 'tenant holds its share; job deferred');
      await job.moveToDelayed(Date.now() + config.ISLET_TENANT_SHARE_RECHECK_MS, token);
      throw new DelayedError();
    }
    try {
      return await work();
    } finally {
      await share.release(mode, job.data.tenant, jobId);
    }
  }

  const slots = (mode: SandboxMode) => {
    metrics.runnerSlots.set({ mode, state: 'busy' }, busy[mode] ?? 0);
    metrics.runnerSlots.set({ mode, state: 'idle' }, config.ISLET_RUNNER_CONCURRENCY - (busy[mode] ?? 0));
  };

  /** A skill job holds a slot like a run; it is not cancellable and not handed back (not journaled). */
  async function processSkill(mode: SandboxMode, job: Job<RunJobData>) {
    const skill = job.data.skill;
    if (!skill || !deps.skills) throw new Error('this runner does not run skills');
    busy[mode] = (busy[mode] ?? 0) + 1;
    slots(mode);
    try {
      return await deps.skills({
        id: job.data.runId,
        tenant: job.data.tenant,
        mode,
        enqueuedAtMs: job.data.enqueuedAtMs,
        skill,
      });
    } finally {
      busy[mode] = (busy[mode] ?? 1) - 1;
      slots(mode);
    }
  }

  async function process(mode: SandboxMode, job: Job<RunJobData>, token?: string) {
    return withTenantSlot(mode, job, token, () =>
      job.data.skill ? processSkill(mode, job) : processRun(mode, job, token),
    );
  }

  async function processRun(mode: SandboxMode, job: Job<RunJobData>, token?: string) {
    const { runId } = job.data;
    const ctl = { cancel: new AbortController(), handBack: new AbortController() };
    active.set(runId, ctl);
    busy[mode] = (busy[mode] ?? 0) + 1;
    slots(mode);
    try {
      const result = await executor.execute({
        runId,
        mode,
        enqueuedAtMs: job.data.enqueuedAtMs,
        cancel: ctl.cancel.signal,
        handBack: ctl.handBack.signal,
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
      busy[mode] = (busy[mode] ?? 1) - 1;
      slots(mode);
    }
  }

  /**
   * BullMQ fails a job that stalled more than maxStalledCount times inside its stalled check,
   * without a worker `failed` event; this sweep finds such jobs (and any other failed one whose
   * run never ended) and ends their runs, so every accepted run reaches a final status.
   */
  async function sweepFailed() {
    for (const queue of queues) {
      try {
        const jobs = await queue.getFailed(0, 99);
        for (const job of jobs) {
          if (!job?.id || job.data.skill || givenUp.has(job.id)) continue;
          givenUp.add(job.id);
          if (givenUp.size > 10_000) givenUp.delete(givenUp.values().next().value as string);
          await executor.giveUp(job.data.runId, job.failedReason || 'the job failed');
        }
      } catch (err) {
        logger.warn({ err: (err as Error).message }, 'failed-job sweep could not run');
      }
    }
  }

  return {
    async start() {
      subscriber = createRedis(config);
      connections.push(subscriber);
      subscriber.on('message', (_ch: string, runId: string) => active.get(runId)?.cancel.abort());
      subscriber.on('error', (err) =>
        logger.warn({ err: err.message }, 'cancel subscriber connection error'),
      );
      await subscriber.subscribe(channels.cancel);
      const shareConnection = createRedis(config);
      connections.push(shareConnection);
      shareConnection.on('error', (err) => logger.warn({ err: err.message }, 'fair-share connection error'));
      share = createFairShare({ redis: shareConnection, config, logger, promote });
      await share.start(config.ISLET_RUNNER_MODES);
      for (const mode of config.ISLET_RUNNER_MODES) {
        const connection = createRedis(config);
        connections.push(connection);
        const worker = new Worker<RunJobData>(runQueueName(mode), (job, token) => process(mode, job, token), {
          connection,
          prefix: QUEUE_PREFIX,
          name: config.ISLET_RUNNER_NAME ?? hostname(),
          concurrency: config.ISLET_RUNNER_CONCURRENCY,
          lockDuration: config.ISLET_RUNNER_LOCK_DURATION_MS,
          stalledInterval: config.ISLET_RUNNER_STALLED_INTERVAL_MS,
          maxStalledCount: config.ISLET_RUNNER_MAX_STALLED_COUNT,
        });
        worker.on('error', (err) => logger.warn({ err: err.message, mode }, 'worker error'));
        worker.on('failed', (job, err) => {
          if (!job) return;
          const exhausted = job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/i.test(err.message);
          logger.warn(
            { runId: job.data.runId, err: err.message, attemptsMade: job.attemptsMade, exhausted },
            'job failed',
          );
          if (exhausted && !job.data.skill && !(err instanceof HandBackError))
            executor
              .giveUp(job.data.runId, err.message)
              .catch((e) => logger.error({ err: e }, 'could not end a failed run'));
        });
        worker.on('stalled', (jobId) => logger.warn({ jobId, mode }, 'job stalled; it will run again'));
        workers.push(worker);
        const queue = new Queue<RunJobData>(runQueueName(mode), { connection, prefix: QUEUE_PREFIX });
        queues.push(queue);
        queueOf.set(mode, queue);
        slots(mode);
      }
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      sweepTimer = setInterval(() => void sweepFailed(), config.ISLET_RUNNER_STALLED_INTERVAL_MS);
      sweepTimer.unref();
    },
    /** Runs this runner holds now. */
    activeRuns: () => [...active.keys()],
    /**
     * Graceful stop: take no new jobs, let running ones finish within `graceMs`, then hand the rest
     * back (their executions abort and the jobs return to the queue for another runner).
     */
    async close(graceMs = config.ISLET_RUNNER_SHUTDOWN_GRACE_MS) {
      if (sweepTimer) clearInterval(sweepTimer);
      const closing = Promise.all(workers.map((w) => w.close()));
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), graceMs).unref());
      if ((await Promise.race([closing.then(() => 'closed' as const), timer])) === 'timeout') {
        logger.warn({ runs: [...active.keys()] }, 'shutdown grace over; handing running jobs back');
        for (const ctl of active.values()) ctl.handBack.abort();
        await closing;
      }
      await share?.close();
      await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
      for (const c of connections) c.disconnect();
    },
  };
}

export type Runner = ReturnType<typeof createRunner>;
