/**
 * A cheap look at a BullMQ queue before a speculative fetch. BullMQ's fetch script is costly even
 * when it finds nothing, and every job it hands out re-adds the queue's marker (so other workers
 * wake and look for more): a worker that just took the last job finds that marker at once when it
 * blocks, and fetches again for nothing. `claimDrained` reads the ready lists and drops the plain
 * marker in one transaction: when nothing is ready, the marker it dropped announced nothing, and
 * any job added afterwards adds its own, so blocking on the marker loses no wake-up.
 *
 * One script, not a MULTI of four commands (round 51 `cluster-path`): as atomic, one command on the
 * wire instead of six (MULTI, the four, EXEC), and on the runner's side one `OneCopyCommand` instead
 * of ioredis's `Pipeline` (~5 KB a run of its allocations, and its slot checks, on a Redis Cluster,
 * where a worker looks before each fetch: one server's workers fetch through the fused fetch).
 * The keys share the queue's hash tag: one slot.
 */
import { LuaScript } from '@islet/core/lua-script';
import type { RedisClient } from 'bullmq';
import type { Redis } from 'ioredis';

/** BullMQ's marker member for "a job is ready" (delayed jobs use `1`, scored by due time). */
const READY_MARKER = '0';

/** 1 when the wait list, prioritized and delayed sets are all empty; drops the ready marker always. */
const CLAIM_DRAINED = new LuaScript(
  "local n = redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3])\n" +
    "redis.call('ZREM', KEYS[4], ARGV[1])\n" +
    'if n == 0 then return 1 end\nreturn 0',
);

/** Whether a script call (its sha) is `claimDrained`'s look, not a pick-up's (tests count those). */
export const isClaimDrainedSha = (sha: string | undefined): boolean => sha === CLAIM_DRAINED.sha;

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
  const drained = await CLAIM_DRAINED.run(
    client as unknown as Redis,
    [key('wait'), key('prioritized'), key('delayed'), key('marker')],
    [READY_MARKER],
  );
  return drained === 1;
}
