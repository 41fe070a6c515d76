/**
 * What a Run (run.ts) is given and gives back, its phases, and the intervals it keeps.
 */

import type { DeadlineWheel } from './deadline-wheel.ts';
import type { ResidentTicker } from './resident-guard.ts';
import type { RunCancel } from './run-cancel.ts';
import type { BindingHandler, LogLine, RunOutcome } from './types.ts';
import type { RunConfig } from './wire.ts';

export interface RunParams {
  code: string;
  config: RunConfig;
  onCall: BindingHandler | undefined;
  timeoutMs: number | null;
  /** Of `timeoutMs`, spent by earlier executions of the run (ExecuteOptions.limits.spentMs). */
  spentMs: number;
  excludeBindingWaits: boolean;
  memoryMb: number;
  outputBytes: number;
  outputCap: 'shared' | 'separate';
  maxConcurrentCalls: number;
  watchdogGraceMs: number;
  signal: AbortSignal | undefined;
  /** ExecuteOptions.cancel: the same as `signal`, listened to without an EventTarget. */
  cancel: RunCancel | undefined;
  /** Live log lines (ExecuteOptions.onLog). */
  onLog?: ((lines: LogLine[]) => void) | undefined;
  /**
   * The engine's reader of a host's resident memory by pid (EngineOptions.residentBytesOf;
   * undefined: /proc), read through the run's host every RESIDENT_GUARD_MS (undefined: unknown).
   * The engine's own function, not a closure a run.
   */
  readResident: ((pid: number) => number | undefined) | undefined;
  /** The engine's one ticker that reads its runs' resident memory (resident-guard.ts). */
  residentTicker: ResidentTicker;
  /** The engine's one timer over its runs' deadlines (deadline-wheel.ts). */
  deadlines: DeadlineWheel;
}

/**
 * How often a running host's resident memory is read, ms. A run is first read between half of it
 * and all of it after its start (the engine's ticker, resident-guard.ts); a run that ends within
 * half of it is never read. The check is outside the host, so it holds while the host's thread
 * runs the program.
 */
export const RESIDENT_GUARD_MS = 100;
/**
 * How long a host that may be in a later turn on its own thread (a delivery sent with `turnMs`,
 * not answered yet) has to answer an `end` before it is killed, ms (at most the watchdog's grace).
 * A turn is short (a call's outcome in, the next call out) or runs into its own deadline, which is
 * the engine's; one that does neither (busy while the run is aborted or stopped) is not waited for.
 */
export const TURN_END_GRACE_MS = 200;

export interface RunResult {
  outcome: Omit<RunOutcome, 'durationMs'>;
  /** The host finished the run cleanly and may serve another. */
  hostReusable: boolean;
  /** The host's `done` said `held`: it makes its next isolate at the engine's `prepare`. */
  hostHeld: boolean;
}

export type Phase = 'running' | 'closing' | 'ending' | 'done';
