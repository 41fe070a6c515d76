/**
 * A runner restarted by `restartRunner` was killed (SIGKILL, a crash): its workers' idle
 * registrations for the direct hand-off (runner README, "Direct hand-off") stay in their queues'
 * idle sets until they expire (the pop's timeout plus 1 s, ~6 s), and a gateway's add hands a
 * submit to the latest live one. The new process prints its ready line before its workers block and
 * register, so a run submitted as the restart resolved was handed to the dead worker: its job
 * active under the dead token, its record Running, until BullMQ's stalled check gave it back (its
 * lock, 30 s, and a check) — a `Prefer: wait=30` submit answered 202 (test/bench/README.md,
 * round 44 `restart-gap`). So a restart resolves only once no registration left by the kill can be
 * chosen: the latest one registered after the kill (a live worker's), or the set empty, or all of
 * them expired.
 */
import { createRedis, type RedisConfig } from '@islet/core';

/** A queue's idle set (`<queue prefix>idle`, @islet/runs handoff-scripts.ts; the queue's tag, core keys.ts). */
const idleKey = (mode: string) => `islet:{runs-${mode}}:idle`;

/** The latest expiry (ms) among the registrations of each mode's queue now, for `untilLiveOnly`. */
export async function idleSnapshot(redis: RedisConfig | string, modes: readonly string[]) {
  const client = createRedis(redis);
  try {
    const latest = new Map<string, number>();
    for (const mode of modes) {
      const top = await client.zrange(idleKey(mode), -1, -1, 'WITHSCORES');
      if (top.length === 2) latest.set(mode, Number(top[1]));
    }
    return latest;
  } finally {
    client.disconnect();
  }
}

/**
 * Waits until no registration in `before` (taken after the kill: the dead process's are fixed
 * then) is the one an add would choose: each queue's set empty, its latest registered since (a
 * later expiry than any of `before`'s: only a live worker writes one), or `before`'s expired.
 * Bounded by their expiry. Returns how many polls waited (0: none had to).
 */
export async function untilLiveOnly(
  redis: RedisConfig | string,
  before: Map<string, number>,
): Promise<number> {
  if (before.size === 0) return 0;
  const client = createRedis(redis);
  let polls = 0;
  try {
    for (const [mode, expiry] of before) {
      for (;;) {
        const top = await client.zrange(idleKey(mode), -1, -1, 'WITHSCORES');
        if (top.length < 2 || Number(top[1]) > expiry || Date.now() > expiry) break;
        polls++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    return polls;
  } finally {
    client.disconnect();
  }
}
