/** What the gateway puts on a run queue and the runner takes off it. The run itself is in Redis. */
export interface RunJobData {
  runId: string;
  tenant: string;
  /** ms since epoch, for islet_queue_wait_seconds. */
  enqueuedAtMs: number;
}

/**
 * BullMQ job options of a run (gateway side). `jobId` = run id, so a retried enqueue of the same
 * run is a no-op. Attempts retry a processor that crashed; a dead runner's job is recovered by
 * BullMQ's stalled-job check instead (runner side: lockDuration / stalledInterval).
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
