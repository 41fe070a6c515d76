/**
 * Periodic expiry of unanswered decisions. Every gateway may run it: `expireDue` hands each
 * expired decision to exactly one caller, which ends the run.
 */
import type { DecisionStore } from './decision-store.ts';
import type { DecisionRecord } from './decision-types.ts';

export interface DecisionExpiryOptions {
  decisions: DecisionStore;
  /** Ends the run of an expired decision (status Cancelled, reason Cancelled). */
  onExpired: (decision: DecisionRecord) => Promise<void>;
  /** How often to look, ms. Default 5000. */
  intervalMs?: number;
  onError?: (error: unknown) => void;
}

export function startDecisionExpiry(options: DecisionExpiryOptions): {
  stop(): Promise<void>;
  tick(): Promise<number>;
} {
  let running: Promise<number> | undefined;
  const tick = async (): Promise<number> => {
    const expired = await options.decisions.expireDue();
    for (const decision of expired) {
      try {
        await options.onExpired(decision);
      } catch (error) {
        options.onError?.(error);
      }
    }
    return expired.length;
  };
  const timer = setInterval(() => {
    if (running) return;
    running = tick()
      .catch((error: unknown) => {
        options.onError?.(error);
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
  }, options.intervalMs ?? 5000);
  timer.unref();
  return {
    tick,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** The message a run ended by decision expiry carries. */
export function expiryMessage(expireAfterMs: number): string {
  return `decision expired: no answer within ${expireAfterMs}ms; the run was stopped`;
}
