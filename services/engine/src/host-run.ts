/**
 * One run inside the sandbox host: the program's turns in its prepared isolate, its log lines,
 * calls and end, each checked here before it becomes a frame to the engine (host-output.ts).
 */
import type ivm from 'isolated-vm';
import { flush, send } from './host-output.ts';
import { encodeFailure, programEnd } from './host-program-end.ts';
import { type HostOutput, HostRunLog } from './host-run-log.ts';
import { deadlineMessage, heapLimitMessage } from './limits.ts';
import type { HostDone, ToHost } from './wire.ts';

export type { HostOutput } from './host-run-log.ts';

/**
 * How often a run past its first turn checks that its isolate was not disposed, ms. Only a disposal
 * outside any turn needs it (see `watchMemory`); it was 20 until round 33 (README, `call-path`).
 */
const MEMORY_POLL_MS = 250;

/**
 * An isolate with its context and the guest harness installed, made while the host is idle so a
 * run does not wait for it. Still one fresh isolate per run: a prepared isolate serves exactly one
 * run and is disposed with it. The callbacks reach whichever run adopted it through `sink`.
 */
export interface Prepared {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** The harness's entry point (harness-install.ts): the run's start and every call's outcome. */
  readonly entry: ivm.Reference;
  readonly memoryMb: number;
  readonly sink: { run: HostRun | undefined };
}

const STDOUT: HostOutput = { send, flush };

/**
 * A turn on this thread that ends the run disposes its isolate from a callback (`finish`), so
 * isolated-vm ends `applySync` with a new Error ("Isolate was disposed during execution") in this
 * process, to be thrown away (only its message is read). Around those turns `Error.stackTraceLimit`
 * is not a number, so V8 captures no stack for the errors made then: with 0 (until round 39) it
 * still captured an empty one, and isolated-vm (`StackTraceHolder::ChainStack`) read the new
 * error's `stack` back, which ran Node's prepareStackTrace to format "Error: …" on every run; with
 * no stack there is nothing to format and one holder is attached instead of a pair (README, round
 * 39 `dispose`). An internal error in a callback of such a turn is logged with its message only.
 * The limit is put back as the turn returns. Returns the limit to put back.
 */
function quietStacks(): number {
  const limit = Error.stackTraceLimit;
  (Error as { stackTraceLimit: number | undefined }).stackTraceLimit = undefined;
  return limit;
}

export class HostRun {
  private readonly isolate: ivm.Isolate;
  /** The isolate's CPU time when this run adopted it, ns. */
  private readonly cpuAtStart: bigint;
  private readonly msg: Extract<ToHost, { t: 'run' }>;
  private readonly allowed: Set<string>;
  private readonly context: ivm.Context;
  private readonly entry: ivm.Reference;
  private finished = false;
  /** Inside `start` or a delivery's turn on this thread: the isolate runs here, called from here. */
  private onThisThread = false;
  /** Work running on isolated-vm's thread: result deliveries with their microtasks. */
  private readonly tasks = new Set<Promise<unknown>>();
  private nextCallId = 0;
  /** Calls made in the current turn on this thread. */
  private callsThisTurn = 0;
  private readonly log: HostRunLog;
  /** The memory-limit poll, armed only once the run outlives its first turn (`watchMemory`). */
  private poll: NodeJS.Timeout | undefined;
  private readonly onFinished: () => void;
  private readonly out: HostOutput;
  /** The host's next make waits for the engine's `prepare`: `done` says `held` (next-isolate.ts). */
  private readonly heldMake: boolean;

  constructor(
    msg: Extract<ToHost, { t: 'run' }>,
    prepared: Prepared,
    onFinished: () => void,
    out: HostOutput = STDOUT,
    heldMake = false,
  ) {
    this.msg = msg;
    this.onFinished = onFinished;
    this.out = out;
    this.heldMake = heldMake;
    this.log = new HostRunLog(msg, out, () => this.onThisThread);
    this.allowed = new Set(msg.config.bindings);
    this.isolate = prepared.isolate;
    this.context = prepared.context;
    this.entry = prepared.entry;
    // The isolate was prepared (harness installed) while the host idled: the run is billed from here.
    this.cpuAtStart = this.isolate.cpuTime;
    prepared.sink.run = this;
  }

  /**
   * isolated-vm disposes an isolate that passes its memory limit; nothing else disposes it but us.
   * Polled only once the first turn returned with the run still going: no timer can fire while that
   * turn holds this thread, and a limit passed in it ends `applySync` with an error read at once
   * (`afterIsolateError`), so a run that ends in its first turn (most) makes and clears no timer.
   * A later turn reports its own too (`applySync`'s error here, the `apply` promise's rejection on
   * isolated-vm's thread: `deliverResult`), so the poll is for a disposal outside any turn only, and
   * slow (`MEMORY_POLL_MS`): a run waiting on its calls is not woken 50 times a second for it.
   * (The process's resident size is the engine's to watch, from outside.)
   */
  private watchMemory(): void {
    if (this.finished || this.poll !== undefined) return;
    this.poll = setInterval(() => {
      if (this.finished) return;
      if (this.isolate.isDisposed) return this.memoryExceeded();
    }, MEMORY_POLL_MS);
  }

  /**
   * The program's first turn (its synchronous part and the microtasks that follow) runs on this
   * thread: an isolate entered from another thread costs CPU on every run (isolated-vm's pool thread,
   * cross-CPU wake-ups and TLB flushes), a large share of a trivial run. Meanwhile no frame
   * is read, so the turn's own deadline is the run's budget, and the engine, told when the turn
   * returned (`turn`, or `done`), kills this process if it must stop the turn sooner (abort).
   */
  start(): void {
    this.onThisThread = true;
    const stackLimit = quietStacks();
    try {
      this.entry.applySync(
        undefined,
        ['start', this.msg.code, JSON.stringify(this.msg.config), undefined, undefined, true],
        this.msg.budgetMs === undefined ? {} : { timeout: this.msg.budgetMs },
      );
    } catch (e) {
      this.afterIsolateError(e);
    } finally {
      Error.stackTraceLimit = stackLimit;
      this.onThisThread = false;
    }
    this.turnReturned();
    this.watchMemory();
  }

  /** With the calls (and lines) the turn made, in one write; a program that ended sent `done` instead. */
  private turnReturned(later = false): void {
    if (!this.finished) {
      const news = this.callsThisTurn > 0 || this.log.pending;
      this.callsThisTurn = 0;
      // A later turn that made no call and printed nothing (one of a Promise.all's outcomes): its
      // answer waits for the next write or the fallback's (host-output.ts), not a write and a
      // wake-up of the runner of its own. Any other is written below, at once: no fallback.
      const held = later && !news;
      this.log.flush(held || 'turn');
      this.out.send({ t: 'turn' }, held || 'turn');
      if (held) return;
    }
    this.out.flush();
  }

  private afterIsolateError(e: unknown): void {
    if (this.finished) return;
    const text = e instanceof Error ? e.message : String(e);
    if (/memory limit/i.test(text) || this.isolate.isDisposed) {
      this.memoryExceeded();
      return;
    }
    if (this.onThisThread && /timed out/i.test(text) && this.msg.budgetMs !== undefined) {
      this.finish({ status: 'failed', kind: 'timeout', message: deadlineMessage(this.msg.budgetMs) });
      return;
    }
    this.finish({ status: 'failed', kind: 'worker-exit', message: 'the sandbox could not run the program' });
  }

  private memoryExceeded(): void {
    this.finish({
      status: 'failed',
      kind: 'worker-exit',
      cause: 'memory',
      message: heapLimitMessage(this.msg.memoryMb),
    });
  }

  /** The engine asked to end the run now. */
  end(kind: Extract<ToHost, { t: 'end' }>['kind']): void {
    if (this.finished) return;
    const done: HostDone = {
      status: 'failed',
      kind: kind === 'stop' ? 'abort' : kind,
      message: `run ended by the engine (${kind})`,
    };
    this.finish(done);
  }

  /**
   * A call's outcome into the program, and the turn it starts. With `turnMs` (the run's clock runs:
   * the engine's deadline is that far) and no delivery still on isolated-vm's thread (their order is
   * kept), the turn runs on this thread as the first turn does: the outcome goes in and the calls the
   * turn makes come out in this one call, two thread hops a call fewer (a wake-up of isolated-vm's
   * thread and one of this thread). Meanwhile no frame is read: an `end` waits for the turn, whose own
   * deadline is `turnMs`, and the engine kills this process if the turn does not return soon after
   * an `end` (run.ts `armTurnGrace`). Without `turnMs` (no deadline, or the clock paused while other
   * calls are out, whose waits a turn here would count) the turn runs on isolated-vm's thread.
   * A turn started with `turnMs` is answered with `turn` either way.
   */
  deliverResult(m: Extract<ToHost, { t: 'result' | 'error' }>): void {
    if (this.finished) return;
    const args =
      m.t === 'result'
        ? ['result', m.id, m.valueJson, undefined, undefined]
        : ['error', m.id, m.name, m.message, m.detailsJson];
    if (m.turnMs !== undefined && this.tasks.size === 0) {
      this.onThisThread = true;
      this.callsThisTurn = 0;
      const stackLimit = quietStacks();
      try {
        this.entry.applySync(undefined, [...args, true], { timeout: Math.max(1, m.turnMs) });
      } catch (e) {
        this.afterIsolateError(e);
      } finally {
        Error.stackTraceLimit = stackLimit;
        this.onThisThread = false;
      }
      this.turnReturned(true);
      return;
    }
    try {
      let turn = this.entry.apply(undefined, args);
      if (m.turnMs !== undefined)
        turn = turn.finally(() => {
          if (!this.finished) this.out.send({ t: 'turn' }, true);
        });
      this.track(turn).catch((e: unknown) => this.afterIsolateError(e));
    } catch (e) {
      this.afterIsolateError(e);
    }
  }

  onLog(level: unknown, text: unknown): void {
    try {
      if (this.finished) return;
      const end = this.log.line(level, text);
      if (end) this.finish(end);
    } catch (e) {
      this.internalError(e);
    }
  }

  onCall(id: unknown, binding: unknown, argsJson: unknown): void {
    try {
      if (this.finished) return;
      if (
        id !== this.nextCallId ||
        typeof binding !== 'string' ||
        !this.allowed.has(binding) ||
        typeof argsJson !== 'string'
      ) {
        this.finish({
          status: 'failed',
          kind: 'exception',
          message: 'binding arguments must be lossless JSON',
        });
        return;
      }
      try {
        JSON.parse(argsJson);
      } catch {
        this.finish({
          status: 'failed',
          kind: 'exception',
          message: 'binding arguments must be lossless JSON',
        });
        return;
      }
      this.nextCallId++;
      this.callsThisTurn++;
      this.log.flush();
      // In a turn on this thread the turn's return writes it (turnReturned): no fallback timer.
      this.out.send({ t: 'call', id, binding, argsJson }, this.onThisThread ? 'turn' : true);
    } catch (e) {
      this.internalError(e);
    }
  }

  onFail(message: unknown, detail?: unknown): void {
    try {
      if (this.finished) return;
      this.finish(encodeFailure(message, detail));
    } catch (e) {
      this.internalError(e);
    }
  }

  onDone(kind: unknown, a: unknown, b: unknown): void {
    try {
      if (this.finished) return;
      this.finish(programEnd(kind, a, b, this.log.used, this.msg.outputBytes));
    } catch (e) {
      this.internalError(e);
    }
  }

  private internalError(e: unknown): void {
    // No stack in a turn on this thread (`quietStacks`): then the message.
    const text = e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e);
    process.stderr.write(`islet host: internal error: ${text}\n`);
    this.finish({ status: 'failed', kind: 'worker-exit', message: 'the sandbox host failed' });
  }

  private track<T>(task: Promise<T>): Promise<T> {
    this.tasks.add(task);
    const forget = () => {
      this.tasks.delete(task);
      // The isolate's turn ended: the calls it made go out together.
      this.out.flush();
    };
    task.then(forget, forget);
    return task;
  }

  private finish(done: HostDone): void {
    if (this.finished) return;
    this.finished = true;
    if (this.poll !== undefined) clearInterval(this.poll);
    // Read before the isolate is disposed (its counters go with it); a disposed one counts nothing.
    let cpuMs: number | undefined;
    try {
      if (!this.isolate.isDisposed) cpuMs = Number(this.isolate.cpuTime - this.cpuAtStart) / 1e6;
    } catch {
      // disposed under us (memory limit)
    }
    // In a turn on this thread the program runs under this very callback, and nothing deferred
    // runs before it returns: the isolate is stopped here, at once, and the turn returns.
    // Also when the program ended: work it left behind (a detached promise chain that spins) would
    // otherwise hold the turn, and the run, until the deadline.
    const stoppedHere = this.onThisThread && !this.isolate.isDisposed && this.tasks.size === 0;
    if (this.onThisThread && !this.isolate.isDisposed) this.isolate.dispose();
    // Stopped on this thread, the program runs no further: V8 ends it as this callback returns, and
    // no delivery is in flight on isolated-vm's thread (see deliverResult). So the run is reported now, and V8 tears
    // the isolate down after (when the turn unwinds, most of a trivial run's time in this host),
    // while the engine already goes on with the result.
    if (stoppedHere) this.report(done, cpuMs);
    // Otherwise dispose first so the program runs no further, then report once the isolate's thread
    // has really stopped: dispose() returns at once, but an uninterruptible builtin keeps running
    // until it returns. If that takes too long, the engine's watchdog kills this process
    // (worker-exit). Deferred: we may be inside a synchronous callback from the isolate's thread.
    setImmediate(() => {
      try {
        this.entry.release();
        this.context.release();
        if (!this.isolate.isDisposed) this.isolate.dispose();
      } catch {
        // already disposed
      }
      if (!stoppedHere) void Promise.allSettled([...this.tasks]).then(() => this.report(done, cpuMs));
    });
  }

  private report(done: HostDone, cpuMs: number | undefined): void {
    this.log.flush();
    this.out.send({
      t: 'done',
      ...done,
      ...(cpuMs !== undefined ? { cpuMs } : {}),
      ...(this.heldMake ? { held: true as const } : {}),
    });
    this.onFinished();
  }
}
