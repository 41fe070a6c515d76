/**
 * The per-mode BullMQ queues the gateway puts runs and skills on (`{runs-<mode>}`, prefix
 * `islet`), and every job command it sends: the add, the take-back of a refused submit's job,
 * a queued run's removal on cancel, the depth the health sampler reads, a skill's wait for its end.
 * Routes and services call these methods; none of them holds a `Queue`.
 */
import { type Redis, wallNow } from '@islet/core';
import { QUEUE_PREFIX, runQueueName, SANDBOX_MODES, type SandboxMode } from '@islet/protocol';
import {
  type AdmissionRide,
  DEFAULT_WRITE_FORMAT,
  type RunJobData,
  runJobOptions,
  SKILL_JOB_NAME,
  skillJobOptions,
  type WriteFormat,
} from '@islet/runs';
import { type Job, Queue } from 'bullmq';
import { handingAdds } from './handoff-add-store.ts';
import type { Reclaimed } from './handoff-reclaim-store.ts';
import type { JobEvents } from './job-events-store.ts';
import { type RunAdd, runAdds } from './run-add-store.ts';

/** A run's job as the gateway names it: one per run (`jobId` = run id) unless `jobId` says otherwise. */
interface RunJob {
  runId: string;
  tenant: string;
  mode: SandboxMode;
  /** BullMQ's retries of a crashed processor (`ISLET_JOB_ATTEMPTS`). */
  attempts: number;
  /** Another job id than the run id (a run queued again after a decision round). */
  jobId?: string;
}

/** What a queued run's cancel found: whether its job was taken off the queue, and in what state. */
interface QueuedRemoval {
  removed: boolean;
  /** The job's state before: `waiting`, `prioritized`, `delayed`, `active`, … or `unknown` (no job). */
  state: string;
}

/** A skill's job, for the one request that waits for it. */
interface SkillJob {
  /** The sealed result the runner returned; rejects after `ttlMs` (`timed out`) or when the job failed. */
  finished(events: JobEvents, ttlMs: number): Promise<unknown>;
  /** Takes the job off the queue (nobody waits for it any more); never rejects. */
  remove(): Promise<void>;
}

/** Job counts per mode the health sampler reads. */
type QueueDepth = Partial<Record<'waiting' | 'prioritized' | 'delayed' | 'active', number>>;

/**
 * A job's enqueue time, ms since the epoch with its fraction, on the clock the runner stamps the
 * same run with (`timings`: pick-up, engine, end; core's `wallNow`, comparable between processes);
 * `Date.now()`'s whole ms read every enqueue → pick-up span half a ms long on average (round 20).
 * The runner's queue-wait metric subtracts it from its own `Date.now()`.
 */
export function enqueueStamp(): number {
  return wallNow();
}

/**
 * `handOff`: a run's add also hands its job to a worker registered idle (handoff-add-store.ts,
 * ISLET_IDLE_HANDOFF); a registration exists only where runners fetch with the run's start (one server).
 * `onReclaimed`: told of each job a hand-off's watch took back from a worker that never took it, and its mode.
 * `liveCheck` (ISLET_HANDOFF_LIVE_CHECK): hand-offs only to registrations whose runner lives
 * (handoff-add-store.ts `HandOffWatchOptions`).
 * `writeFormat` (ISLET_WRITE_FORMAT): `'2'` leaves the run id out of a run's job data when its job id
 * is the run's (every reader since round 40 reads it from there: @islet/runs `jobRunId`).
 */
export function createRunQueueStore(
  redis: Redis,
  onError: (err: Error) => void,
  handOff = false,
  writeFormat: WriteFormat = DEFAULT_WRITE_FORMAT,
  onReclaimed?: (r: Reclaimed, mode: SandboxMode) => void,
  liveCheck = false,
) {
  // The stamps' clock offset read now (a few ms of spinning, once), not at the first submit.
  enqueueStamp();
  const queues = Object.fromEntries(
    SANDBOX_MODES.map((mode) => [
      mode,
      new Queue<RunJobData>(runQueueName(mode), { connection: redis, prefix: QUEUE_PREFIX }),
    ]),
  ) as Record<SandboxMode, Queue<RunJobData>>;
  for (const mode of SANDBOX_MODES) {
    const q = queues[mode];
    q.on('error', onError);
    // Its mode: the adds read its runners' compact registrations too (@islet/runs handoff-terms.ts).
    // A job handed to a runner killed while registered is taken back (handoff-reclaim-store.ts).
    if (handOff)
      handingAdds(q, mode, { onReclaimed: onReclaimed && ((r) => onReclaimed(r, mode)), liveCheck });
  }
  const adds = Object.fromEntries(SANDBOX_MODES.map((mode) => [mode, runAdds(queues[mode])])) as Record<
    SandboxMode,
    RunAdd
  >;

  return {
    /**
     * The raw queues, for the scrape-time metrics (queue-metrics-store.ts, another store) and
     * tests; routes, services and the recovery loop use the methods.
     */
    queues,

    /**
     * `ride`: the submit's admission, sent with the add (run-add-store.ts `RunAdd`). Resolves to
     * the job's id ('' when the admission it carried refused). Not `async`: the add's own promise
     * (round 44 `submit-peek`); an unknown mode rejects.
     */
    enqueueRun(job: RunJob, ride?: AdmissionRide): Promise<string> {
      const add = adds[job.mode];
      if (add === undefined) return Promise.reject(new Error(`no queue for mode ${job.mode}`));
      return add(
        'run',
        // ~50 bytes of the submit's fsync'd write (test/bench/README.md, round 40 `format-two`).
        writeFormat === '2' && job.jobId === undefined
          ? { tenant: job.tenant, enqueuedAtMs: enqueueStamp() }
          : { runId: job.runId, tenant: job.tenant, enqueuedAtMs: enqueueStamp() },
        {
          ...runJobOptions(job.runId, job.attempts),
          ...(job.jobId !== undefined ? { jobId: job.jobId } : {}),
        },
        ride,
      );
    },

    /** Removes a run's job whatever its state (a refused submit's); true when one was removed. */
    async takeBack(mode: SandboxMode, runId: string): Promise<boolean> {
      return (await queues[mode].remove(runId)) === 1;
    },

    /** Removes a run's job if it is still queued (waiting, prioritized or delayed), never an active one. */
    async removeQueued(mode: SandboxMode, runId: string): Promise<QueuedRemoval> {
      const job = await queues[mode].getJob(runId);
      const state = job ? await job.getState() : 'unknown';
      if (!job || !(state === 'waiting' || state === 'delayed' || state === 'prioritized'))
        return { removed: false, state };
      const removed = await job.remove().then(
        () => true,
        () => false,
      );
      return { removed, state };
    },

    /** Whether a job of that id is on the mode's queue (in any state). */
    async hasJob(mode: SandboxMode, jobId: string): Promise<boolean> {
      return Boolean(await queues[mode].getJob(jobId));
    },

    /** Per mode, in SANDBOX_MODES order: waiting, prioritized, delayed and active jobs. */
    async depths(): Promise<QueueDepth[]> {
      return Promise.all(
        SANDBOX_MODES.map((m) => queues[m].getJobCounts('waiting', 'prioritized', 'delayed', 'active')),
      );
    },

    async enqueueSkill(mode: SandboxMode, data: RunJobData, skillId: string): Promise<SkillJob> {
      const job: Job<RunJobData> = await queues[mode].add(SKILL_JOB_NAME, data, skillJobOptions(skillId));
      return {
        finished: (events, ttlMs) => job.waitUntilFinished(events.eventsFor(mode), ttlMs),
        remove: () => job.remove().catch(() => undefined),
      };
    },

    /** The queues for bull-board (`/queues`), which sends its own commands. */
    forBoard(): Queue<RunJobData>[] {
      return Object.values(queues);
    },

    async close(): Promise<void> {
      await Promise.all(Object.values(queues).map((q) => q.close()));
    },
  };
}

export type RunQueueStore = ReturnType<typeof createRunQueueStore>;
