/**
 * What a hand-off test reads of the shared Redis (handoff-terms-mixed, handoff-compact): the idle
 * registrations as stored, and whether a submit handed its job (the submit's script pushed the
 * fetch's answer to a worker's hand-off key: a `ZADD …:handoff:<worker>` a script sent, MONITOR).
 */
import { createRedis } from '@islet/core';
import { expect } from 'vitest';

const IDLE = 'islet:{runs-read-only}:idle';
const IDLE_ARGS = 'islet:{runs-read-only}:idle:args';

/** The registrations standing once one stands (an idle worker registered before its pop). */
export async function registrations(redis: ReturnType<typeof createRedis>): Promise<string[]> {
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    if ((await redis.zcard(IDLE)) > 0) {
      const stored = await redis.hvals(IDLE_ARGS);
      if (stored.length > 0) return stored;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no idle registration');
}

/** Runs `submit` under MONITOR; the hand-off pushes a script sent while it ran. */
export async function handOffsDuring<T>(
  redisUrl: string,
  submit: () => Promise<T>,
): Promise<{ result: T; pushes: number }> {
  const watcher = createRedis(redisUrl);
  // ioredis takes the MONITOR lines that arrive in the same read as MONITOR's OK (before its status is
  // `monitoring`) for replies without a command ("Command queue state error", 'error' events emitted
  // before `watcher.monitor()` resolves: unhandled, they failed live-check-mixed and handoff-terms-mixed
  // at load 15). So the listeners go on before the connection: such lines, all before the submit, are
  // dropped; a push line lost would read 0 pushes, a failure, never a false hand-off.
  const monitor = watcher.duplicate({ monitor: true, lazyConnect: true });
  monitor.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    monitor.once('monitoring', () => resolve());
    monitor.connect().catch(reject);
  });
  let pushes = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua' && args[0]?.toLowerCase() === 'zadd' && /:handoff:[^:]+$/.test(args[1] ?? ''))
      pushes++;
  });
  try {
    const result = await submit();
    // MONITOR's lines come on their own connection: those of the submit arrive before its answer's
    // effects are read here, but give them a moment.
    await new Promise((r) => setTimeout(r, 100));
    return { result, pushes };
  } finally {
    monitor.disconnect();
    watcher.disconnect();
  }
}

/** The registration's form: the full form is a JSON object, the compact one an array. */
export function formOf(stored: string): 'full' | 'compact' {
  const parsed = JSON.parse(stored) as unknown;
  expect(typeof parsed).toBe('object');
  return Array.isArray(parsed) ? 'compact' : 'full';
}
