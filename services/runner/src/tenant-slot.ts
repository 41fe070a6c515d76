/**
 * A job's slot lease in its pool (fair-share.ts), around its processor (runner.ts): taken (or
 * carried by the run's start), given back, or the job deferred; and a deferred job's promotion.
 */

import type { SandboxMode } from '@islet/protocol';
import { jobRunId, promoteReserved, type RunJobData } from '@islet/runs';
import { DelayedError, type Job } from 'bullmq';
import type { JobLease } from './fair-share.ts';
import type { RunnerContext } from './runner-context.ts';

/**
 * Promotes a job a slot was leased to (a reservation): true when it will run (promoted, or already
 * back in the queue), false when it is gone (removed, ended), `busy` when it is still there but was
 * not promoted (still active after the tries: its runner's move to delayed has not landed). Its
 * reservation is then given up (fair-share.ts), and a `busy` job back in its first place in its
 * tenant's order.
 */
export async function promote(
  ctx: RunnerContext,
  mode: SandboxMode,
  jobId: string,
): Promise<boolean | 'busy'> {
  const worker = ctx.modeWorkers.get(mode);
  const job = await worker?.queue.getJob(jobId);
  if (!worker || !job) return false;
  const { queue } = worker;
  // To where the next fetch pops, as the end's own script promotes (promote-reserved-6.lua says
  // why); BullMQ's promote (the other end of the wait list) only for a prioritized job.
  const moved = (): Promise<boolean | 'active'> =>
    promoteReserved(worker.connection, queue, jobId).then(
      (how) =>
        how === 'active'
          ? how
          : how === 'promoted' ||
            (how === 'prioritized' &&
              job.promote().then(
                () => true,
                () => false,
              )),
      () => false,
    );
  // A job still active was deferred a moment ago and its runner has not moved it to the delayed
  // set yet: wait for the move rather than leave it to its recheck.
  for (let tries = 0; tries < 20; tries++) {
    const how = await moved();
    if (how === true) return true;
    // The script saw it active: BullMQ's state (a script of its own) need not be asked.
    const state = how === 'active' ? how : await job.getState();
    if (state === 'waiting' || state === 'prioritized') return true;
    // Moved to delayed between the promote and this read (its runner's move landed): promoted
    // now. Answered "gone" instead, its slot was given on and the job waited for its recheck
    // (ISLET_TENANT_SHARE_RECHECK_MS), out of its tenant's deferred set (reserved-promote.test.ts).
    if (state === 'delayed') continue;
    if (state !== 'active') return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return 'busy';
}

/**
 * A job deferred (its tenant at its share, or the pool full): counted and logged, whether the
 * processor moves it (`withTenantSlot`) or the fetch's script did (mode-worker.ts).
 */
export function noteDeferral(
  ctx: Pick<RunnerContext, 'metrics' | 'logger'>,
  mode: SandboxMode,
  job: { jobId: string; tenant: string; limit: number },
): void {
  ctx.metrics.shareDeferrals.inc({ mode });
  ctx.logger.debug({ ...job, mode }, 'job deferred: it waits for a slot of the pool');
}

/** The job back to the queue, delayed (its tenant at its share, or the pool full): no attempt spent. */
async function deferJob(
  ctx: RunnerContext,
  mode: SandboxMode,
  job: Job<RunJobData>,
  jobId: string,
  token: string,
  limit: number,
): Promise<never> {
  noteDeferral(ctx, mode, { jobId, tenant: job.data.tenant, limit });
  await job.moveToDelayed(Date.now() + ctx.config.ISLET_TENANT_SHARE_RECHECK_MS, token);
  throw new DelayedError();
}

/**
 * Nothing to give back when the run's end gave it back or its start refused it; a start that
 * never answered (its reply lost) may have taken it, and a release of nothing is harmless.
 */
const mustRelease = (lease: JobLease | undefined): boolean =>
  !lease?.answer || (lease.answer.ok && !lease.endReleased);

/**
 * Runs `work` inside one of the tenant's slots of the pool, or sends the job back to the queue
 * (delayed, no attempt spent; it has not started) when the tenant already holds its share. On
 * one server a run's lease is taken by its attempt's start (`work` gets it, the executor passes
 * it on) and given back by its end; a skill's, or any run's on a Cluster, is taken here first.
 * A refusal the fused fetch made is mostly moved to delayed by that fetch's script already (the job
 * never gets here, fetch-start-store.ts); what reaches `defer` is the rest: a hand-off's refusal, a
 * paused or capped queue, a fetch past its moves, a Cluster's or a skill's lease.
 */
export async function withTenantSlot<T>(
  ctx: RunnerContext,
  mode: SandboxMode,
  job: Job<RunJobData>,
  token: string | undefined,
  work: (lease?: JobLease) => Promise<T>,
  fetchedStart?: unknown,
): Promise<T> {
  const { share, releasing } = ctx;
  const jobId = job.id ?? jobRunId(job);
  if (!share || !token) return work();
  // A refusal's deferral (`deferJob`) and the end's release check are functions of their own, not
  // closures made for every run (a run refused is rare).
  // The fetch may have taken the lease and begun the attempt already (one server): the lease
  // then carries that answer to the attempt's start, which asks Redis nothing more.
  // A fetch that began the attempt: its lease made in this turn, so a handed job's processor
  // reaches its executor without an await (run-processing.ts; `runLease` awaits nothing then either,
  // but its promise, and the continuation a microtask later, came before the run's start).
  const lease = job.data.skill
    ? undefined
    : fetchedStart !== undefined
      ? share.fetchedLease(mode, job.data.tenant, jobId, fetchedStart)
      : await share.runLease(mode, job.data.tenant, jobId);
  if (!lease) {
    const { ok, limit } = await share.acquire(mode, job.data.tenant, jobId);
    if (!ok) return deferJob(ctx, mode, job, jobId, token, limit);
  }
  let result: T;
  try {
    result = await work(lease);
  } catch (err) {
    // Thrown past the executor: given back before the slot frees (the processor's end), or this
    // worker's next fetch may take its lease on its own connection before Redis has the release
    // and read a full pool (a deferral under contention). A round trip on a failure only.
    if (mustRelease(lease)) await share.release(mode, job.data.tenant, jobId);
    throw err;
  }
  // Not awaited: the job's completion (BullMQ's moveToCompleted, which fetches this slot's
  // next job) goes out with it instead of a round trip later. The next job's acquire follows
  // on the same connection, so Redis sees the release first; a slot the release leases to a
  // deferred job is reserved for it whichever job BullMQ hands this worker next.
  if (mustRelease(lease)) {
    const released = share.release(mode, job.data.tenant, jobId);
    releasing.add(released);
    void released.finally(() => releasing.delete(released));
  }
  if (lease?.answer && !lease.answer.ok) return deferJob(ctx, mode, job, jobId, token, lease.answer.limit);
  return result;
}
