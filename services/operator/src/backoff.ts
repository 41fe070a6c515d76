/** Exponential backoff with full jitter: the delay doubles per failure up to `maxMs`. */
export interface BackoffOptions {
  /** First delay, ms. Default 250. */
  initialMs?: number;
  /** Ceiling, ms. Default 30 000. */
  maxMs?: number;
  /** 0..1 share of the delay that is randomized. Default 0.2. */
  jitter?: number;
}

export class Backoff {
  private failures = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly jitter: number;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 250;
    this.maxMs = options.maxMs ?? 30_000;
    this.jitter = options.jitter ?? 0.2;
  }

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** this.failures);
    this.failures++;
    return Math.round(base * (1 - this.jitter * Math.random()));
  }

  reset(): void {
    this.failures = 0;
  }

  get attempts(): number {
    return this.failures;
  }
}
