/**
 * One run as the engine drives it: sends the program to a sandbox host, relays binding calls to
 * `onCall`, keeps the time budget (time-budget.ts) with a watchdog that kills the host when it does
 * not stop, collects log lines and settles into a RunOutcome.
 * Its parameters and timings are in run-params.ts, the outcome and failures it reports in
 * run-outcome.ts (the outcome its end settles with too), the frames it sends and its checks of
 * those it reads in run-frames.ts, the log it keeps in run-log.ts, its calls (logged, in flight, waiting) in run-calls.ts, its resident-memory guard
 * in resident-guard.ts; handing a call to `onCall` is binding-outcome.ts's `callHandler`.
 * What remains is one state machine (running/closing/ending/done) whose transitions read each
 * other's fields; split further, each half would need the other's internals.
 */
import { callHandler, handlerFailedOutcome, normalizeOutcome } from './binding-outcome.ts';
import type { HostProcess } from './host-process.ts';
import { deadlineMessage, outputLimitMessage } from './limits.ts';
import { type ResidentWatched, residentFailure } from './resident-guard.ts';
import { RunCalls } from './run-calls.ts';
import { callRefusal, checkedDone, outcomeFrame, runFrame } from './run-frames.ts';
import { RunLog } from './run-log.ts';
import { abortMessage, hostExitFailure, programFailure, settledOutcome } from './run-outcome.ts';
import { type Phase, type RunParams, type RunResult, TURN_END_GRACE_MS } from './run-params.ts';
import { TimeBudget } from './time-budget.ts';
import type { BindingCall, LogLine, RunFailure, StopCode } from './types.ts';
import type { FromHost, HostDone } from './wire.ts';

export class Run implements ResidentWatched {
  private readonly host: HostProcess;
  private readonly p: RunParams;
  private phase: Phase = 'running';
  private readonly log: RunLog;
  private readonly calls: RunCalls;
  private hostDone: HostDone | undefined;
  /** The isolate's CPU time as the host reported it with `done`. */
  private cpuMs: number | undefined;
  private ending: RunFailure | undefined;
  private stop: { code: StopCode; message: string; atCall: number } | undefined;
  private failure: RunFailure | undefined;
  private valueJson: string | undefined;
  private hostReusable = false;
  /** The host's `done` said `held` (wire.ts): the engine sends `prepare` once it parked the host. */
  private hostHeld = false;
  /**
   * The program's first turn, which the host runs on its own thread and reads no frame meanwhile
   * (an `end` would wait for it; its deadline is the budget's, kept there): `running` until the
   * host says it returned (`turn` or `done`); `killed` when the engine ended the program by ending
   * the host (its exit is expected, not a failure), `drained` once what that host wrote was read
   * (or a grace passed) and the run may close.
   */
  private firstTurn: 'pending' | 'running' | 'returned' | 'killed' | 'drained' = 'pending';
  /**
   * Deliveries sent with `turnMs` the host has not answered with `turn` yet: it may be running one
   * of their turns on its own thread, reading no frame (host-run.ts `deliverResult`). `killed` and
   * `drained` above then also mean a host ended in such a turn.
   */
  private turnsOut = 0;
  private readonly budget: TimeBudget;
  private watchdogTimer: NodeJS.Timeout | undefined;
  /** The engine's resident ticker's count at which this run's host is read next (resident-guard.ts). */
  dueTick = 0;
  private resolve!: (r: RunResult) => void;
  private readonly onAbort = () => this.endNow({ kind: 'abort', message: abortMessage(this.p.signal) });
  private readonly onCancel = () => this.endNow({ kind: 'abort', message: abortMessage(this.p.cancel) });

  constructor(host: HostProcess, params: RunParams) {
    this.host = host;
    this.p = params;
    this.log = new RunLog(params.outputBytes);
    this.calls = new RunCalls(params.maxConcurrentCalls);
    this.budget = new TimeBudget(
      params.timeoutMs,
      // Guarded: the engine's one deadline timer (deadline-wheel.ts) ends other runs in the same call.
      () =>
        this.guard(() => this.endNow({ kind: 'timeout', message: deadlineMessage(params.timeoutMs ?? 0) })),
      params.deadlines,
      params.spentMs,
    );
  }

  execute(): Promise<RunResult> {
    const result = new Promise<RunResult>((resolve) => {
      this.resolve = resolve;
    });
    this.host.attach({
      onMessage: (m) => this.guard(() => this.onMessage(m)),
      onProtocolError: (reason) =>
        this.guard(() =>
          this.finishNow({
            kind: 'protocol',
            message: `the sandbox host sent a malformed message: ${reason}`,
          }),
        ),
      onExit: (info) => this.guard(() => this.onHostExit(info)),
    });
    if (this.host.exited) {
      this.finishNow({
        kind: 'worker-exit',
        message: 'the sandbox host process ended before the run started',
      });
      return result;
    }
    const aborted = this.p.signal?.aborted
      ? this.p.signal
      : this.p.cancel?.aborted
        ? this.p.cancel
        : undefined;
    if (aborted !== undefined) {
      // Aborted while a host was being found: nothing ran.
      this.finishNow({ kind: 'abort', message: abortMessage(aborted) });
      return result;
    }
    const sent = this.host.send(runFrame(this.p, () => this.budget.remainingMs()));
    if (!sent) {
      this.finishNow({ kind: 'protocol', message: 'the program is too large for the sandbox channel' });
      return result;
    }
    // The deadline's timer is armed right after the write, not before it: the frame carries what is
    // left of the budget either way (the clock was not running), and the timer's set-up is off the
    // program's path to its host (test/bench/README.md, round 40 `seq-stages`).
    this.resumeClock();
    this.firstTurn = 'running';
    // After the program's write, in the same turn: nothing can abort the signal in between (no
    // other code runs), and an EventTarget listener is ~15-20 µs of cold code on a run's start.
    this.p.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.p.cancel?.listen(this.onCancel);
    this.p.residentTicker.watch(this);
    return result;
  }

  // ---- resident memory (the engine's ticker reads it, resident-guard.ts) -------------------------

  checkResident(): boolean {
    let resident: number | undefined;
    try {
      resident = this.host.residentBytes(this.p.readResident);
    } catch {
      // Unknown this time (as an unreadable /proc is): read again at the next due tick.
      resident = undefined;
    }
    const failure = residentFailure(this.p.memoryMb, resident);
    if (failure === undefined) return false;
    this.finishNow(failure);
    return true;
  }

  // ---- time budget ------------------------------------------------------------------------------

  private resumeClock(): void {
    if (this.phase !== 'done') this.budget.resume();
  }

  // ---- messages from the host -------------------------------------------------------------------

  private onMessage(m: FromHost): void {
    if (this.phase === 'done') return;
    switch (m.t) {
      case 'logs':
        this.onLogs(m.lines);
        if (m.truncated) this.log.truncated = true;
        return;
      case 'call':
        this.onCallMessage(m);
        return;
      case 'turn':
        if (this.firstTurn === 'running') this.firstTurn = 'returned';
        else if (this.turnsOut > 0) this.turnsOut--;
        return;
      case 'done':
        if (this.firstTurn === 'running') this.firstTurn = 'returned';
        this.turnsOut = 0;
        if (m.cpuMs !== undefined) this.cpuMs = m.cpuMs;
        if (m.held === true) this.hostHeld = true;
        this.onHostDone(m);
        return;
      default:
        this.finishNow({ kind: 'protocol', message: 'the sandbox host sent an unexpected message' });
        return;
    }
  }

  private onLogs(lines: [LogLine['level'], string][]): void {
    const from = this.log.lines.length;
    // Code Mode keeps the most log text it may and goes on; run_code fails the run.
    if (this.log.keep(lines) && this.p.outputCap === 'shared')
      this.endNow({ kind: 'output-limit', message: outputLimitMessage(this.p.outputBytes) });
    this.log.tell(from, this.p.onLog);
  }

  private onCallMessage(m: Extract<FromHost, { t: 'call' }>): void {
    const refusal = callRefusal(m, this.calls.log.length, this.p.config.bindings);
    if (refusal !== undefined) {
      this.finishNow({ kind: 'protocol', message: refusal });
      return;
    }
    const call: BindingCall = { index: m.id, binding: m.binding, argsJson: m.argsJson };
    const dropped = this.phase !== 'running';
    this.calls.add(call, dropped);
    if (!dropped && this.calls.admit(call)) this.startCall(call);
  }

  private startCall(call: BindingCall): void {
    const inFlight = this.calls.start(call);
    if (this.p.excludeBindingWaits && inFlight === 1) this.budget.pause();
    callHandler(this.p.onCall, call, this.calls.signal()).then(
      (outcome) => this.guard(() => this.onCallSettled(call, outcome)),
      () => this.guard(() => this.onCallSettled(call, handlerFailedOutcome())),
    );
  }

  private onCallSettled(call: BindingCall, raw: unknown): void {
    // The outcome handed to the caller is final: a call settling after the run ended is not recorded.
    if (this.phase === 'done') return;
    const outcome = normalizeOutcome(raw);
    const inFlight = this.calls.settle(call, outcome ?? handlerFailedOutcome());
    if (this.p.excludeBindingWaits && inFlight === 0 && this.phase !== 'closing') this.resumeClock();
    if (outcome === undefined) {
      // The host gave something that is not a lossless JSON outcome: the program cannot receive it.
      this.endNow({ kind: 'exception', message: 'binding resolution must be lossless JSON' });
    } else if (outcome.type === 'stop') {
      if (this.stop === undefined) {
        this.stop = { code: outcome.code, message: outcome.message, atCall: call.index };
        this.calls.dropQueue();
        if (this.phase === 'running') {
          this.phase = 'ending';
          if (this.firstTurn === 'running') this.killHostInTurn();
          else {
            this.host.send({ t: 'end', kind: 'stop' });
            this.armEndWait();
          }
        }
      }
    } else if (this.phase === 'running') {
      // While the clock runs, the turn this outcome starts may run on the host's own thread with
      // what is left as its deadline (no thread hop); paused (other calls out, their waits not
      // counted) or without a deadline, on isolated-vm's thread, where an `end` reaches it.
      const turnMs =
        this.p.timeoutMs !== null && this.budget.running()
          ? Math.max(1, Math.ceil(this.budget.remainingMs()))
          : undefined;
      // Gathered with the tick's other outcomes only while other calls are out: a lone call's
      // outcome (none other can settle in this tick) goes at once, with no tick to end a burst.
      const sent = this.host.send(outcomeFrame(call.index, outcome, turnMs), inFlight > 0);
      if (!sent && !this.host.exited) {
        this.endNow({ kind: 'protocol', message: 'a binding result is too large for the sandbox channel' });
        return;
      }
      if (sent && turnMs !== undefined) this.turnsOut++;
      const next = this.calls.next();
      if (next) this.startCall(next);
    }
    this.maybeFinish();
  }

  private onHostDone(reported: HostDone): void {
    if (this.hostDone !== undefined) {
      this.finishNow({ kind: 'protocol', message: 'the sandbox host reported the run done twice' });
      return;
    }
    const { failure, done } = checkedDone(reported, this.p.timeoutMs);
    if (failure !== undefined) {
      this.finishNow(failure);
      return;
    }
    this.hostDone = done;
    clearTimeout(this.watchdogTimer);
    this.hostReusable = this.firstTurn !== 'killed' && this.firstTurn !== 'drained';
    this.calls.dropQueue();
    if (this.phase === 'running') {
      // The program ended by itself: calls already started settle before the run closes.
      this.phase = 'closing';
      if (done.status === 'completed') this.valueJson = done.valueJson;
      else {
        this.failure = programFailure(done);
      }
      if (this.p.excludeBindingWaits) this.resumeClock();
    }
    this.maybeFinish();
  }

  private onHostExit(info: { code: number | null; signal: NodeJS.Signals | null; stderr: string }): void {
    if (this.phase === 'done') return;
    // Killed on purpose: the run closes once its output was read (`killHostInTurn`).
    if (this.firstTurn === 'killed' || this.firstTurn === 'drained') return;
    if (this.hostDone !== undefined && this.phase === 'closing') {
      // The program had ended; only the host's idle process went away.
      this.hostReusable = false;
      return;
    }
    this.finishNow(hostExitFailure(info));
  }

  // ---- ending -----------------------------------------------------------------------------------

  /** Ends the run for a reason of the engine's (deadline, abort, output cap, bad resolution). */
  private endNow(failure: RunFailure): void {
    if (this.phase === 'done' || this.ending !== undefined) return;
    if (this.phase === 'closing') {
      // The program already ended; stop waiting for its started calls.
      this.failure = failure;
      this.finish();
      return;
    }
    this.ending = failure;
    this.phase = 'ending';
    this.calls.dropQueue();
    if (this.hostDone !== undefined) {
      this.finish();
      return;
    }
    if (this.firstTurn === 'running' && failure.kind !== 'timeout') {
      // Ends now, as asked (a deadline the host keeps itself).
      this.killHostInTurn();
      return;
    }
    this.host.send({ t: 'end', kind: failure.kind });
    this.armEndWait();
  }

  /**
   * After an `end`: the watchdog, or, when the host may be in a later turn on its own thread (it
   * reads the `end` only when that turn returns, its own deadline the engine's), a short grace
   * after which the program is ended by ending its host, as in the first turn, with the failure
   * asked for (not `worker-exit`: the host did nothing wrong, it could not read).
   */
  private armEndWait(): void {
    if (this.turnsOut === 0) {
      this.armWatchdog();
      return;
    }
    clearTimeout(this.watchdogTimer);
    this.watchdogTimer = setTimeout(
      () =>
        this.guard(() => {
          if (this.phase === 'ending' && this.hostDone === undefined && this.firstTurn !== 'killed')
            this.killHostInTurn();
        }),
      Math.min(TURN_END_GRACE_MS, this.p.watchdogGraceMs),
    );
  }

  /**
   * The host runs the program's first turn (and, with `turnMs`, later ones) on its own thread and
   * would read an `end` only when the program yields, which a busy one never does: the program is
   * ended by ending its host.
   */
  private killHostInTurn(): void {
    this.firstTurn = 'killed';
    this.hostReusable = false;
    this.host.kill();
    // Lines the program printed before are still in the pipe: the run closes once they were read
    // (the process's output closed), or after the watchdog's grace should that never happen.
    const drained = () =>
      this.guard(() => {
        clearTimeout(this.watchdogTimer);
        if (this.firstTurn !== 'killed') return;
        this.firstTurn = 'drained';
        this.maybeFinish();
      });
    this.watchdogTimer = setTimeout(drained, this.p.watchdogGraceMs);
    void this.host.whenClosed().then(drained);
  }

  private armWatchdog(): void {
    clearTimeout(this.watchdogTimer);
    this.watchdogTimer = setTimeout(() => {
      this.host.kill();
      this.hostReusable = false;
      this.failure = {
        kind: 'worker-exit',
        message: `the sandbox host did not stop within ${this.p.watchdogGraceMs}ms and was killed`,
      };
      this.ending = undefined;
      this.finish();
    }, this.p.watchdogGraceMs);
  }

  private maybeFinish(): void {
    if (this.phase === 'done') return;
    if (this.phase === 'closing' && this.calls.inFlightCount === 0) {
      this.finish();
      return;
    }
    if (this.phase === 'ending' && (this.hostDone !== undefined || this.firstTurn === 'drained')) {
      if (this.stop !== undefined && this.calls.inFlightCount > 0) return;
      this.finish();
      return;
    }
  }

  /** Runs an event handler; a bug of ours ends this run instead of escaping into the caller's process. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.finishNow({
        kind: 'protocol',
        message: `the engine could not handle the sandbox host: ${e instanceof Error ? e.message : String(e)}`,
      });
    }
  }

  /** Ends the run at once, whatever is in flight (host gone or misbehaving). */
  private finishNow(failure: RunFailure): void {
    if (this.phase === 'done') return;
    this.failure = failure;
    this.ending = undefined;
    this.stop = undefined;
    this.hostReusable = false;
    this.host.kill();
    this.finish();
  }

  private finish(): void {
    if (this.phase === 'done') return;
    this.phase = 'done';
    this.budget.stop();
    clearTimeout(this.watchdogTimer);
    this.p.residentTicker.unwatch(this);
    this.p.signal?.removeEventListener('abort', this.onAbort);
    this.p.cancel?.unlisten(this.onCancel);
    this.host.attach(undefined);
    this.calls.end();
    this.calls.dropQueue();
    const outcome = settledOutcome(
      this.stop,
      this.ending ?? this.failure,
      this.valueJson,
      this.log,
      this.calls.log,
      this.cpuMs,
      this.budget.spentMs(),
    );
    if (outcome.status === 'failed') this.hostReusable = false;
    this.resolve({ outcome, hostReusable: this.hostReusable && !this.host.exited, hostHeld: this.hostHeld });
  }
}
