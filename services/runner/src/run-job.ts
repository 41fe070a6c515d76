/**
 * A running job as the runner hands it to its executor (run-processing.ts) and keeps it in its
 * `active` map: the job's fields, the engine's stop handle, and its three signals made only when
 * something asks for one.
 *
 * `cancel`, `handBack` and `stop` serve rare uses: a cancel request or a hand-back at shutdown
 * (`abort`), a run's first gateway call (its requests' composite signal), a released run's wait.
 * Three `AbortController`s made for every run (six objects with their signals, and Node's
 * EventTarget state in each) cost a run that makes no call and is never cancelled, most runs, for
 * nothing (test/bench/README.md, round 40 `runner-alloc`). A signal asked for after its abort is
 * made aborted with the same reason, so every reader sees what eager controllers gave: `stop`
 * aborted with the first of the two's reason, `cancel`'s and `handBack`'s own, the engine's handle
 * told after the aborted one's listeners and before `stop`'s.
 */

import { RunCancel } from '@islet/engine';
import type { SandboxMode } from '@islet/protocol';
import type { RunLease } from '@islet/runs';
import type { ExecutionSlot } from './call-parking.ts';
import type { ExecuteJob } from './run-executor-types.ts';

type Which = 'cancel' | 'handBack';

/** An aborted controller's reason when `abort()` is given none (what `AbortController#abort` makes). */
const abortError = (): DOMException => new DOMException('This operation was aborted', 'AbortError');

/** A controller for a signal asked for now: aborted already with `reason` when its abort came first. */
function controllerOf(aborted: boolean, reason: unknown): AbortController {
  const controller = new AbortController();
  if (aborted) controller.abort(reason);
  return controller;
}

export class RunJob implements ExecuteJob {
  /** Handed to the engine instead of `stop`: no EventTarget listener a run (the engine's RunCancel). */
  readonly stopEngine = new RunCancel();
  /** A cancel request for this run came (read without making `cancel`). */
  cancelled = false;
  /** The runner handed this job back at shutdown (read without making `handBack`). */
  handedBack = false;
  private cancelReason: unknown;
  private handBackReason: unknown;
  /** The first abort's reason: `stop`'s. */
  private stopReason: unknown;
  private stopped = false;
  private cancelController: AbortController | undefined;
  private handBackController: AbortController | undefined;
  private stopController: AbortController | undefined;

  readonly runId: string;
  readonly mode: SandboxMode;
  readonly enqueuedAtMs: number;
  readonly fetchedAtMs: number;
  /** Given, the run parks while its calls wait (call-parking.ts). */
  readonly slot: ExecutionSlot | undefined;
  readonly lease: RunLease | undefined;

  constructor(
    runId: string,
    mode: SandboxMode,
    enqueuedAtMs: number,
    fetchedAtMs: number,
    slot: ExecutionSlot | undefined,
    lease: RunLease | undefined,
  ) {
    this.runId = runId;
    this.mode = mode;
    this.enqueuedAtMs = enqueuedAtMs;
    this.fetchedAtMs = fetchedAtMs;
    this.slot = slot;
    this.lease = lease;
  }

  /** Aborted by a cancel request for this run. */
  get cancel(): AbortSignal {
    this.cancelController ??= controllerOf(this.cancelled, this.cancelReason);
    return this.cancelController.signal;
  }

  /** Aborted when the runner hands the job back (shutdown grace ran out). */
  get handBack(): AbortSignal {
    this.handBackController ??= controllerOf(this.handedBack, this.handBackReason);
    return this.handBackController.signal;
  }

  /** Aborted with whichever of the two is, first, with its reason. */
  get stop(): AbortSignal {
    this.stopController ??= controllerOf(this.stopped, this.stopReason);
    return this.stopController.signal;
  }

  /**
   * Aborts `which` (once; a second call does nothing), then the engine's handle and `stop` with its
   * reason (each once: a hand-back after a cancel leaves them with the cancel's), in that order.
   */
  abort(which: Which): void {
    let reason: unknown;
    if (which === 'cancel') {
      if (this.cancelled) return;
      this.cancelled = true;
      reason = this.cancelReason = abortError();
      this.cancelController?.abort(reason);
    } else {
      if (this.handedBack) return;
      this.handedBack = true;
      reason = this.handBackReason = abortError();
      this.handBackController?.abort(reason);
    }
    this.stopEngine.abort(reason);
    if (this.stopped) return;
    this.stopped = true;
    this.stopReason = reason;
    this.stopController?.abort(reason);
  }
}
