/**
 * Redis names every component agrees on: gateway and runner (BullMQ), operator (queue depth).
 * Queue names carry a hash tag so each queue's keys share one Redis Cluster slot.
 */
import type { SandboxMode } from './kinds.ts';

/** BullMQ `prefix` option for every Islet queue. */
export const QUEUE_PREFIX = 'islet';

/** The BullMQ queue that feeds the runner pool of one sandbox mode. */
export function runQueueName(mode: SandboxMode): string {
  return `{runs-${mode}}`;
}

/** Sorted set (score: paused-at ms) of run ids of one mode paused for a decision. */
export function pausedRunsKey(mode: SandboxMode): string {
  return `islet:paused:{runs-${mode}}`;
}
