/**
 * Pick-up watchdog: defense in depth against a BullMQ worker that silently stops fetching.
 *
 * BullMQ has a class of defects where a worker stays "running" but never takes another job: its
 * blocking client re-dials and the promise it waits on never settles (the Redis Cluster ready
 * check fixed in core redis-connection.ts; taskforcesh/bullmq#3088, #3185, #4378). Nothing
 * errors, so nothing else notices; the runner just sits idle with free slots while its queue
 * grows. This watchdog looks for exactly that state and replaces the worker.
 *
 * A mode is stuck when, at two consecutive checks, its worker held no job, the queue had jobs
 * waiting (`wait` + `prioritized`) and no pick-up happened in between: a healthy idle worker takes
 * a waiting job within milliseconds (the queue's marker wakes its blocking wait), so one whole
 * interval of that is never normal. A worker that holds jobs is never restarted, even if it may
 * also have stopped fetching: closing it would fail those jobs' completions and run them twice.
 * A check whose count query fails (or does not answer within the interval) proves nothing and
 * restarts nothing; it also clears the mode's suspicion, so a restart always rests on two good
 * observations. After a restart the mode starts over, so one mode restarts at most every two
 * intervals.
 */
import type { Logger } from '@islet/core';

interface PickupWatchdogOptions<M extends string> {
  /** Modes (one worker each) to watch. */
  modes: readonly M[];
  /**
   * Milliseconds between checks. A mode is restarted after it looked stuck at two consecutive
   * checks, i.e. after at least one whole interval. Runner default: ISLET_RUNNER_PICKUP_WATCHDOG_MS
   * (5000). Must be > 0 (the runner does not create a watchdog when the setting is 0).
   */
  intervalMs: number;
  /**
   * What the mode's worker holds now, read synchronously: `held` = jobs inside the processor
   * (from its start to its end, deferred ones included); `lastPickupAtMs` = ms since epoch of the
   * last job that entered the processor (undefined: none yet).
   */
  probe: (mode: M) => { held: number; lastPickupAtMs: number | undefined };
  /** Jobs waiting in the mode's queue (`wait` + `prioritized`); a rejection skips the mode. */
  countWaiting: (mode: M) => Promise<number>;
  /**
   * Replaces the mode's worker. Called in the same synchronous step in which the watchdog saw
   * `held` = 0, so no job can enter the old worker's processor before it starts closing.
   */
  restart: (mode: M) => Promise<void>;
  /** Counter incremented once per completed restart (`islet_runner_worker_restarts_total`). */
  restarts: { inc(labels: { mode: M }): void };
  logger: Pick<Logger, 'warn' | 'error'>;
  /** Clock, ms since epoch. Default `Date.now`. */
  now?: () => number;
}

/** What the previous check saw of a mode that looked stuck. */
interface Suspect {
  lastPickupAtMs: number | undefined;
}

export function createPickupWatchdog<M extends string>(options: PickupWatchdogOptions<M>) {
  const { modes, intervalMs, probe, countWaiting, restart, restarts, logger } = options;
  if (!(intervalMs > 0)) throw new Error('pick-up watchdog interval must be > 0 ms');
  const now = options.now ?? Date.now;
  const suspects = new Map<M, Suspect>();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let closed = false;

  /** A count query that hangs counts as failed: it must not hold the watchdog past its interval. */
  function countWithin(mode: M): Promise<number> {
    let t: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new Error(`no answer within ${intervalMs} ms`)), intervalMs);
      t.unref();
    });
    return Promise.race([countWaiting(mode), late]).finally(() => clearTimeout(t));
  }

  async function checkMode(mode: M) {
    if (probe(mode).held > 0) {
      suspects.delete(mode);
      return;
    }
    let waiting: number;
    try {
      waiting = await countWithin(mode);
    } catch (err) {
      suspects.delete(mode);
      logger.warn({ mode, err: (err as Error).message }, 'pick-up watchdog: could not count waiting jobs');
      return;
    }
    // Read again after the await: a job may have been picked up meanwhile.
    const { held, lastPickupAtMs } = probe(mode);
    if (closed || held > 0 || waiting <= 0) {
      suspects.delete(mode);
      return;
    }
    const before = suspects.get(mode);
    if (!before || before.lastPickupAtMs !== lastPickupAtMs) {
      suspects.set(mode, { lastPickupAtMs });
      return;
    }
    suspects.delete(mode);
    const t = now();
    logger.warn(
      {
        mode,
        waiting,
        msSinceLastPickup: lastPickupAtMs === undefined ? null : t - lastPickupAtMs,
      },
      'worker held no job while jobs waited for a whole check interval; restarting it',
    );
    try {
      await restart(mode);
      restarts.inc({ mode });
    } catch (err) {
      logger.error({ mode, err: (err as Error).message }, 'pick-up watchdog: worker restart failed');
    }
  }

  async function checkAll() {
    for (const mode of modes) {
      if (closed) return;
      await checkMode(mode);
    }
  }

  /**
   * One check of every mode. While a check runs, another call returns the running one instead of
   * starting a second (timer ticks that come due meanwhile are skipped, not queued).
   */
  function check(): Promise<void> {
    if (closed) return Promise.resolve();
    inFlight ??= checkAll().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  }

  return {
    start() {
      if (timer || closed) return;
      timer = setInterval(() => void check(), intervalMs);
      timer.unref();
    },
    check,
    /** Stops the checks and waits for a running one (and its restart) to finish. */
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await inFlight;
    },
  };
}

export type PickupWatchdog = ReturnType<typeof createPickupWatchdog>;
