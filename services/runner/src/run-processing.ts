/**
 * A mode worker's processor (runner.ts): a job takes a slot (slot-gate.ts) and its tenant's lease
 * (tenant-slot.ts), then runs as a skill or a run; a run's end may go with its job's completion.
 */

import { wallNow } from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import { jobRunId, type RunJobData } from '@islet/runs';
import { DelayedError, type Job } from 'bullmq';
import type { FairShare, JobLease } from './fair-share.ts';
import type { ParkingWorker } from './parking-worker.ts';
import { HandBackError } from './run-executor.ts';
import { endedResult } from './run-executor-types.ts';
import { RunJob } from './run-job.ts';
import { RunSlot } from './run-slot.ts';
import { gateFor, type RunnerContext } from './runner-context.ts';
import { withTenantSlot } from './tenant-slot.ts';

/** A skill job holds a slot like a run; it is not cancellable and not handed back (not journaled). */
async function processSkill(ctx: RunnerContext, mode: SandboxMode, job: Job<RunJobData>) {
  const skill = job.data.skill;
  if (!skill || !ctx.skills) throw new Error('this runner does not run skills');
  return ctx.skills({
    id: jobRunId(job),
    tenant: job.data.tenant,
    mode,
    enqueuedAtMs: job.data.enqueuedAtMs,
    skill,
  });
}

export async function processModeJob(
  ctx: RunnerContext,
  mode: SandboxMode,
  job: Job<RunJobData>,
  token: string | undefined,
  worker: ParkingWorker<RunJobData>,
) {
  const { held, lastPickupAtMs, logger } = ctx;
  const fetchedAtMs = wallNow();
  held[mode] = (held[mode] ?? 0) + 1;
  lastPickupAtMs[mode] = Date.now();
  const jobId = job.id ?? jobRunId(job);
  const fairShare = ctx.share;
  const slot = new RunSlot(
    gateFor(ctx, mode),
    fairShare && token ? new ShareLease(fairShare, mode, job.data.tenant, jobId, logger) : undefined,
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
    // The fetch's reserved slot (a handed job's, a fetched one's) in this turn, not through
    // `take`'s promise: with the lease below made in the turn too, the executor's start runs in the
    // processor's own call (round 42 `pickup-floor`).
    if (!slot.takeReserved(token)) await slot.take(token);
    const fuseEnd = fetchedStart !== undefined && !job.data.skill;
    return await withTenantSlot(
      ctx,
      mode,
      job,
      token,
      (lease) => {
        if (lease && fuseEnd)
          lease.deferEnd = (keys, args, status) => {
            // With the end's status, the job's completion goes at once, with what this processor
            // will return for it (`endedResult`, the executor's), not after the processor returns.
            const complete = status && token ? { job, token, result: endedResult(status) } : undefined;
            const ended = worker.deferEnd(jobId, keys, args, slot.active ? token : undefined, complete);
            if (ended) {
              slotAfterEnd = true;
              const free = () => slot.end();
              void ended.then(free, free);
            }
            return ended;
          };
        return job.data.skill
          ? processSkill(ctx, mode, job)
          : processRun(ctx, mode, job, token, slot, fetchedAtMs, lease);
      },
      fetchedStart,
    );
  } finally {
    if (!slotAfterEnd) slot.end();
    held[mode] = (held[mode] ?? 1) - 1;
  }
}

/**
 * A parked run's lease changes (run-slot.ts): one object a run whose methods are its class's, not
 * an object and four closures made for every run, most of which never park.
 */
class ShareLease {
  private readonly share: FairShare;
  private readonly mode: SandboxMode;
  private readonly tenant: string;
  private readonly jobId: string;
  private readonly logger: RunnerContext['logger'];

  constructor(
    share: FairShare,
    mode: SandboxMode,
    tenant: string,
    jobId: string,
    logger: RunnerContext['logger'],
  ) {
    this.share = share;
    this.mode = mode;
    this.tenant = tenant;
    this.jobId = jobId;
    this.logger = logger;
  }

  release(): Promise<void> {
    return this.share.release(this.mode, this.tenant, this.jobId);
  }
  reclaim(): Promise<void> {
    return this.share.reclaim(this.mode, this.tenant, this.jobId);
  }
  hold(): void {
    this.share.hold(this.mode, this.tenant, this.jobId);
  }
  failed(err: unknown): void {
    this.logger.warn({ err: (err as Error).message, jobId: this.jobId }, 'fair-share lease of a parked run');
  }
}

async function processRun(
  ctx: RunnerContext,
  mode: SandboxMode,
  job: Job<RunJobData>,
  token: string | undefined,
  slot: RunSlot,
  fetchedAtMs: number,
  lease: JobLease | undefined,
) {
  const { config, executor, logger, active } = ctx;
  const runId = jobRunId(job);
  const run = new RunJob(
    runId,
    mode,
    job.data.enqueuedAtMs,
    fetchedAtMs,
    config.ISLET_RUNNER_PARKED_MAX > 0 ? slot : undefined,
    lease,
  );
  active.set(runId, run);
  try {
    const result = await executor.execute(run);
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
    // Whatever way the run left (a throw, a replay's end without the lease), its lease's release
    // follows (tenant-slot.ts): never before a resume's take-back sent answered (run-slot.ts).
    const settling = slot.leaseEnding();
    if (settling) await settling;
  }
}
