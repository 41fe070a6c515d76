/**
 * A binding call as it crosses every boundary (sandbox host, engine, runner, gateway, journal):
 * the program's call and the outcome it receives. Values travel as JSON text.
 */
import type { AppErrorName, StopCode } from './kinds.ts';

/** One binding call as the program made it. */
export interface BindingCall {
  /** 0-based, in the order the program started its calls. Stable across replays of the same program. */
  index: number;
  /** `connection.capability` for `apps.*` bindings, the bare name for flat tools. */
  binding: string;
  /** The arguments as lossless JSON text (`null` when the program passed none). */
  argsJson: string;
}

/** What the host answers to a binding call. */
export type BindingOutcome =
  /** The call's result, as JSON text; the program receives the parsed value. */
  | { type: 'result'; valueJson: string }
  /** The call failed; the program receives a catchable Error with this `name`, `message` and `details`. */
  | { type: 'error'; name: AppErrorName; message: string; details?: Record<string, unknown> }
  /**
   * Stop the run at this call without failing it: `suspended` (a decision is needed; the run will be
   * replayed), `replay-mismatch` (the program diverged from its journal), `cancelled`. Calls already
   * started still settle (the host is told), no new call is sent, and the outcome has status `stopped`.
   */
  | { type: 'stop'; code: StopCode; message: string };

/** What the engine tells a binding handler besides the call. */
export interface BindingContext {
  /**
   * Aborted when the run has ended (deadline, abort, stop, host failure, or the program finished and
   * the engine stopped waiting) and this call's outcome can no longer be used.
   */
  signal: AbortSignal;
}

export type BindingHandler = (call: BindingCall, context: BindingContext) => Promise<BindingOutcome>;
