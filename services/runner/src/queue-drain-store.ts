/**
 * A cheap look at a BullMQ queue before a speculative fetch. BullMQ's fetch script is costly even
 * when it finds nothing, and every job it hands out re-adds the queue's marker (so other workers
 * wake and look for more): a worker that just took the last job finds that marker at once when it
 * blocks, and fetches again for nothing. `claimDrained` reads the ready lists and drops the plain
 * marker in one transaction: when nothing is ready, the marker it dropped announced nothing, and
 * any job added afterwards adds its own, so blocking on the marker loses no wake-up.
 */
import type { RedisClient } from 'bullmq';

/** BullMQ's marker member for "a job is ready" (delayed jobs use `1`, scored by due time). */
const READY_MARKER = '0';

/**
 * True when no job is waiting, prioritized or delayed (the ready marker is gone too): the worker
 * can block on the marker. False when any is: the caller fetches right after (a delayed job may be
 * due, and only BullMQ's fetch promotes it); the fetch re-adds the marker for other workers.
 */
/** `keys`: BullMQ's queue keys (`worker.keys`), of which wait, prioritized, delayed and marker. */
export async function claimDrained(
  client: RedisClient,
  keys: Readonly<Record<string, string>>,
): Promise<boolean> {
  const key = (name: string): string => {
    const k = keys[name];
    if (!k) throw new Error(`BullMQ queue key ${name} missing`);
    return k;
  };
  const replies = await client
    .multi()
    .llen(key('wait'))
    .runCommand('zcard', [key('prioritized')])
    .runCommand('zcard', [key('delayed')])
    .runCommand('zrem', [key('marker'), READY_MARKER])
    .exec();
  if (!replies) return false;
  for (const [err] of replies) if (err) throw err;
  return replies.slice(0, 3).every(([, n]: [Error | null, unknown]) => n === 0);
}
