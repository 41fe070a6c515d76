/** What the gateway puts on a run queue and the runner takes off it. The run itself is in Redis. */
export interface RunJobData {
  /**
   * The run's id, which is also its job's id (`runJobOptions`): a run's job written by format 2
   * (core config `ISLET_WRITE_FORMAT`) leaves it out (~50 bytes of the submit's fsync'd write,
   * test/bench/README.md, round 40 `format-two`); read it through `jobRunId`. A skill's job keeps it.
   */
  runId?: string;
  tenant: string;
  /** ms since epoch, for islet_queue_wait_seconds. */
  enqueuedAtMs: number;
  /**
   * Present on `skill` jobs (BullMQ job name `skill`, run_code skill requests on the same mode
   * queue): the sealed request. `runId` is then the skill run's id (`skill-<uuid>`, no run record).
   */
  skill?: SkillJobPayload;
}

/** A job's run id: its data's `runId` (format 1, skills), else its job id (format 2's run jobs). */
export function jobRunId(job: { readonly id?: string; readonly data: { readonly runId?: string } }): string {
  return job.data.runId ?? job.id ?? '';
}

export interface SkillJobPayload {
  /** `sealer.seal(JSON.stringify({ language, code, timeout? }))`: program text is sealed at rest. */
  sealedRequest: string;
  /** Session whose workspace is the program's working directory (absent: a scratch dir). */
  sessionId?: string;
}

/** BullMQ job name of run_code skill jobs (runs are named `run`). */
export const SKILL_JOB_NAME = 'skill';

/**
 * BullMQ job options of a skill run. One attempt: a processor error is not retried (the skill's
 * own failure is its answer). A runner that dies mid-program is recovered by BullMQ's stalled
 * check like a run's job: the program runs again from the start on another runner (skills are
 * not journaled) and the waiting caller gets that answer. Finished jobs are kept briefly: the
 * gateway reads the sealed result from the completion event or, if it missed it, the job.
 */
export function skillJobOptions(skillId: string) {
  return {
    jobId: skillId,
    attempts: 1,
    removeOnComplete: { age: 300, count: 10_000 },
    removeOnFail: { age: 3600 },
  };
}

/**
 * BullMQ job options of a run (gateway side). `jobId` = run id, so a retried enqueue of the same
 * run is a no-op. Attempts retry a processor that crashed; a dead runner's job is recovered by
 * BullMQ's stalled-job check instead (runner side: lockDuration / stalledInterval).
 *
 * Cost per run, measured with `npm run bench` (Redis commands per run, MONITOR): the add, the
 * fetch and the completion are one script each, BullMQ's texts run through bull-quiet.ts on one
 * server (no events stream entries: skill waiters read skill jobs' completions, which BullMQ's
 * own script writes; the completed set trimmed, 3 commands, on 1 completion in 8). Keeping
 * completed jobs an hour (not `removeOnComplete: true`) keeps a late duplicate enqueue of the same
 * run id (the recovery loop racing a slow submit) a no-op in BullMQ itself, not only in the
 * runner's final-status check; it costs those 3 commands, not a round trip. The worker's drain delay (BullMQ default 5 s)
 * only bounds an idle worker's blocking wait for the queue marker: a new job wakes it at once, so
 * it costs no latency and is left at the default. Neither the events stream's length (BullMQ's
 * `streams.events.maxLen`, default 10000: ~0.6 MB a queue) nor the completed set's age/count
 * cleanup cost measurable Redis time per run (each XADD/XTRIM and each removal is per entry,
 * whatever the bound); they only bound memory, so both stay as they are (test/bench/README.md).
 */
export function runJobOptions(runId: string, attempts: number) {
  return {
    jobId: runId,
    attempts,
    backoff: { type: 'fixed' as const, delay: 500 },
    removeOnComplete: { age: 3600, count: 10_000 },
    removeOnFail: { age: 24 * 3600 },
  };
}
