/**
 * What the runner's hand-off tests (handoff, handoff-live, handoff-reclaim, handoff-compact,
 * fetch-takeback) share on the gateway's side of a hand-off: the run queue's key prefix, a queue
 * whose adds hand off as the gateway's (`handingAdds`, with or without its watch on hand-offs a
 * worker never took), a run job's add for tenant `acme`, and the registration a worker killed
 * while idle leaves.
 */
import { QUEUE_PREFIX, runQueueName } from '@islet/protocol';
import { handOffKeys, runJobOptions } from '@islet/runs';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { type HandOffWatchOptions, handedWatchOf, handingAdds } from '../../gateway/src/handoff-add-store.ts';
import type { HandedWatch } from '../../gateway/src/handoff-reclaim-store.ts';
import { handOff, mode, type RunnerHarness, type RunnerUnderTest, untilIdle } from './runner-harness.ts';
import { editedTerms } from './stored-terms.ts';

/** The key prefix of `mode`'s run queue (its keys and its workers' hand-off keys start with it). */
export const prefix = `${QUEUE_PREFIX}:${runQueueName(mode)}:`;

export interface HandingOptions extends HandOffWatchOptions {
  /**
   * The add holds its mode's names, as the gateway's (compact registrations read); `false`: an add
   * without them (handoff-compact.test.ts: a compact registration is then unusable).
   */
  withNames?: boolean;
}

/**
 * A queue of `mode` on its own connection (a duplicate of `redis`) whose adds hand off as the
 * gateway's; `reclaimMs` its watch on hand-offs a worker never took (0: none, a gateway that
 * restarted since: the stalled check's case), `liveCheck` the add's check of the worker's channel.
 */
export function handingQueue(redis: Redis, { withNames = true, ...watching }: HandingOptions = {}): Queue {
  const q = new Queue(runQueueName(mode), { connection: redis.duplicate(), prefix: QUEUE_PREFIX });
  handingAdds(q, withNames ? mode : undefined, watching);
  return q;
}

/** `handingQueue` with its watch (a watched queue: `reclaimMs` not 0), which a test drives itself. */
export function watchedQueue(redis: Redis, opts: HandingOptions = {}): { q: Queue; watch: HandedWatch } {
  const q = handingQueue(redis, opts);
  const watch = handedWatchOf(q);
  if (!watch) throw new Error('no watch');
  return { q, watch };
}

/**
 * A run job `id` of tenant `acme` added to `q` with `attempts`, as the gateway's submit adds it;
 * `lean`: without the run id in its data (the job's id is the run's).
 */
export const addOn = (q: Queue, id: string, attempts = 1, lean = false) =>
  q.add(
    'run',
    lean
      ? { tenant: 'acme', enqueuedAtMs: Date.now() }
      : { runId: id, tenant: 'acme', enqueuedAtMs: Date.now() },
    runJobOptions(id, attempts),
  );

/**
 * What a worker killed while idle leaves: `runner`'s registration (after a warm-up run tagged
 * `tag`) copied under `id` with its own hand-off key, `ttlMs` to live (a minute; above a live
 * worker's when it is to be chosen first) and `lockMs` its lock (the runner's own when not given),
 * in the form the runner wrote; then `runner` closed, so nothing pops it (and no one holds its live
 * channel). Returns the dead worker's keys.
 */
export async function registerDead(
  h: Pick<RunnerHarness, 'warmUp'>,
  redis: Redis,
  runner: RunnerUnderTest,
  tag: string,
  id: string,
  { ttlMs = 60_000, lockMs }: { ttlMs?: number; lockMs?: number } = {},
) {
  await h.warmUp(runner, tag);
  await untilIdle(redis, runner);
  const stored = (await redis.hget(handOff.idleArgs, runner.worker().id)) ?? '{}';
  await runner.close();
  const dead = handOffKeys(prefix, id);
  const now = Number((await redis.time())[0]) * 1000;
  await redis.zadd(handOff.idle, now + ttlMs, id);
  const lock = lockMs === undefined ? {} : { lockDuration: lockMs };
  await redis.hset(
    handOff.idleArgs,
    id,
    editedTerms(stored, { token: `${id}:h:0`, ...lock, handOff: dead.handOff }),
  );
  return dead;
}
