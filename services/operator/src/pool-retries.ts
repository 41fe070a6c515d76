/**
 * Pools failing to reconcile, for the controller (controller.ts): each is retried after an
 * exponential delay (doubling per failure, reset by a success), not on every event or resync.
 */
import { Backoff, type BackoffOptions } from './backoff.ts';

const DEFAULT_RETRY: BackoffOptions = { initialMs: 1_000, maxMs: 300_000 };

interface Retry {
  backoff: Backoff;
  failures: number;
  delayMs: number;
  generation: number | undefined;
  timer: NodeJS.Timeout | undefined;
}

export class PoolRetries {
  private readonly retries = new Map<string, Retry>();
  private readonly opts: BackoffOptions;

  constructor(opts: BackoffOptions | undefined) {
    this.opts = opts ?? DEFAULT_RETRY;
  }

  has(name: string): boolean {
    return this.retries.has(name);
  }

  /** The pool failed at another generation than `generation` (someone changed its spec since). */
  changedSince(name: string, generation: number | undefined): boolean {
    const r = this.retries.get(name);
    return r !== undefined && r.generation !== undefined && generation !== r.generation;
  }

  /** The retry state of a pool that is failing, else undefined. */
  state(name: string): { failures: number; delayMs: number } | undefined {
    const r = this.retries.get(name);
    return r ? { failures: r.failures, delayMs: r.delayMs } : undefined;
  }

  clear(name: string): void {
    const r = this.retries.get(name);
    if (r) clearTimeout(r.timer);
    this.retries.delete(name);
  }

  /** One more failure: `due` runs after the pool's next delay. */
  schedule(name: string, generation: number | undefined, due: () => void): void {
    const prev = this.retries.get(name);
    if (prev) clearTimeout(prev.timer);
    const backoff = prev?.backoff ?? new Backoff(this.opts);
    const delayMs = backoff.next();
    const r: Retry = { backoff, failures: backoff.attempts, delayMs, generation, timer: undefined };
    r.timer = setTimeout(() => {
      r.timer = undefined;
      due();
    }, delayMs);
    this.retries.set(name, r);
  }

  /** Stops every pending retry's timer (the failures are kept). */
  stopTimers(): void {
    for (const r of this.retries.values()) clearTimeout(r.timer);
  }
}
