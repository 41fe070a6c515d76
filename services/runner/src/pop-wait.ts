/**
 * BullMQ's `waitForJob` (worker.js, 5.81.5) for a hand-off worker's blocking pop, its watchdog the
 * worker's one `PopWatchdog` timer (pop-watchdog.ts) instead of a `setTimeout` armed and cleared
 * around every pop: at one client the worker blocks once a run, so that was a timer a run (round 49
 * `engine-timers-2`: 701 of 709 `setTimeout`s over 700 runs). Everything else is BullMQ's, in its
 * order: the paused, closing and rate-limit checks, the block's length, the delays reset, the pop
 * raced against its deadline (its length + 1 s), and when the deadline wins (a connection that died
 * without a word) the connection dropped and made again before the worker fetches; the marker's
 * score read as BullMQ reads it; an error emitted unless a connection's, an ended client connected
 * again, then BullMQ's short delay. Written against one BullMQ version: with another, the
 * worker's own `waitForJob` waits (handoff-wait.ts), its timer a pop as before.
 */
import { isNotConnectionError, isRedisCluster, type RedisClient } from 'bullmq';
import { version } from 'bullmq/dist/esm/version.js';
import type { PopWatchdog } from './pop-watchdog.ts';

/** The BullMQ version whose `waitForJob` this restates. */
export const WAIT_FOR_JOB_VERSION = '5.81.5';

/** This BullMQ's `waitForJob` is the one restated here. */
export const ownWaitForJob = version === WAIT_FOR_JOB_VERSION;

/** What the pop answers: BullMQ's `bzpopmin` reply on the marker (key, member, score), or none. */
export type PopAnswer = readonly [string, string, string] | null | undefined;

/** The worker's fields and methods `waitForJob` reads (protected or private in BullMQ's types). */
export interface WaitingWorker {
  paused: boolean;
  closing: Promise<void> | undefined;
  isRateLimited(): boolean;
  getBlockTimeout(blockUntil: number): number;
  updateDelays(): void;
  keys: Record<string, string>;
  blockingConnection: {
    capabilities: { canDoubleTimeout: boolean };
    reconnect(): Promise<void>;
    disconnect(wait?: boolean): Promise<void>;
  };
  emit(event: 'error', err: Error): boolean;
  delay(): Promise<void>;
}

/** BullMQ's `isClientLive` (worker.js, module-private). */
function isClientLive(client: RedisClient): boolean {
  return client.status === 'ready' || (client.status === 'connect' && isRedisCluster(client));
}

/**
 * `worker.waitForJob(bclient, blockUntil)` with `pop(marker, timeoutS)` as its `bzpopmin` and
 * `watchdog` as its timer: the next block's time (0: fetch now; Infinity: paused or after an error).
 */
export async function waitForPop(
  worker: WaitingWorker,
  watchdog: PopWatchdog,
  bclient: RedisClient,
  blockUntil: number,
  pop: (marker: string, timeoutS: number) => Promise<PopAnswer>,
): Promise<number> {
  if (worker.paused) return Number.POSITIVE_INFINITY;
  try {
    if (!worker.closing && !worker.isRateLimited()) {
      let blockTimeout = worker.getBlockTimeout(blockUntil);
      if (blockTimeout > 0) {
        blockTimeout = worker.blockingConnection.capabilities.canDoubleTimeout
          ? blockTimeout
          : Math.ceil(blockTimeout);
        // We cannot trust that the blocking connection stays blocking forever (BullMQ's words):
        // past its length + 1 s the pop is given up and its connection made again.
        let timedOut = false;
        const result = await new Promise<PopAnswer>((resolve, reject) => {
          watchdog.watch(blockTimeout * 1000 + 1000, () => {
            timedOut = true;
            resolve(null);
          });
          worker.updateDelays();
          pop(worker.keys.marker ?? '', blockTimeout).then(resolve, reject);
        });
        if (timedOut && !worker.closing) {
          // A socketless client: let it reconnect first, then drop the auto-resent blocking command.
          if (!isClientLive(bclient)) await worker.blockingConnection.reconnect();
          if (isClientLive(bclient) && !worker.closing) {
            // Awaited, so the reconnect cannot see a stale "ready".
            await worker.blockingConnection.disconnect(true);
            if (!worker.closing) await worker.blockingConnection.reconnect();
          }
        }
        if (result) {
          const member = result[1];
          if (member) {
            const newBlockUntil = Number.parseInt(result[2], 10);
            if (blockUntil && newBlockUntil > blockUntil) return blockUntil;
            return newBlockUntil;
          }
        }
      }
      return 0;
    }
  } catch (error) {
    if (isNotConnectionError(error as Error)) worker.emit('error', error as Error);
    // Recover a terminal client.
    if (!worker.closing && bclient.status === 'end') {
      try {
        await bclient.connect();
      } catch (reconnectError) {
        if (bclient.status === 'end' && isNotConnectionError(reconnectError as Error))
          worker.emit('error', reconnectError as Error);
      }
    }
    if (!worker.closing) await worker.delay();
  } finally {
    watchdog.clear();
  }
  return Number.POSITIVE_INFINITY;
}
