/**
 * The binding calls of one run (run.ts): every call the host asked for (the outcome's `calls`), those
 * handed to `onCall` and not settled, and those waiting in order for one of `maxConcurrentCalls`.
 */
import { abortQuietly } from './abort-reason.ts';
import type { BindingCall, BindingOutcome, CallLogEntry } from './types.ts';

export class RunCalls {
  /** Every call the host asked for, by index. */
  readonly log: CallLogEntry[] = [];
  private readonly inFlight = new Set<number>();
  private readonly queue: BindingCall[] = [];
  private readonly maxConcurrent: number;
  /**
   * Aborted when the run ends with handlers still running: tells them their outcome is no longer
   * used. Made at the first call (most runs call nothing); its reason is made once
   * (abort-reason.ts).
   */
  private ended: AbortController | undefined;

  constructor(maxConcurrent: number) {
    this.maxConcurrent = maxConcurrent;
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Logs a call the host asked for; a `dropped` one never starts. */
  add(call: BindingCall, dropped: boolean): void {
    this.log.push({
      index: call.index,
      binding: call.binding,
      argsJson: call.argsJson,
      startedAtMs: Date.now(),
    });
    if (dropped) this.log[call.index]!.dropped = true;
  }

  /** True when `call` may start now; otherwise it waits its turn (`next`). */
  admit(call: BindingCall): boolean {
    if (this.inFlight.size < this.maxConcurrent) return true;
    this.queue.push(call);
    return false;
  }

  /** Marks `call` handed to `onCall`; returns how many are in flight. */
  start(call: BindingCall): number {
    this.log[call.index]!.startedAtMs = Date.now();
    this.inFlight.add(call.index);
    return this.inFlight.size;
  }

  /** The signal handed to `onCall` with each call. */
  signal(): AbortSignal {
    this.ended ??= new AbortController();
    return this.ended.signal;
  }

  /** Records `call`'s outcome; returns how many are still in flight. */
  settle(call: BindingCall, outcome: BindingOutcome): number {
    const entry = this.log[call.index]!;
    this.inFlight.delete(call.index);
    entry.outcome = outcome;
    entry.settledAtMs = Date.now();
    return this.inFlight.size;
  }

  /** The next waiting call, if any. */
  next(): BindingCall | undefined {
    return this.queue.shift();
  }

  dropQueue(): void {
    for (const call of this.queue.splice(0)) this.log[call.index]!.dropped = true;
  }

  /**
   * The run ended: handlers still running learn their outcome is no longer used. With none in
   * flight every outcome was used and there is nothing to tell: no abort (its event and dispatch
   * were ~60 µs a calling run on a loaded runner; test/bench/README.md, round 30 `runner-cpu`).
   */
  end(): void {
    if (this.ended && this.inFlight.size > 0) abortQuietly(this.ended);
  }
}
