/**
 * Executes one run (one BullMQ job) through the engine: reads the run and the limits it was
 * accepted with (a run from before limit snapshots reads the current platform settings), takes a fresh attempt number from the journal, replays journaled calls and sends new
 * ones through the gateway client, and writes the final status. Never blocks the event loop: the
 * isolate lives in a sandbox host process. A run's ends outside its program and their metering
 * (`meter`, `end`, `counted`, `giveUp`) moved to run-ends.ts.
 */
import { wallNow } from '@islet/core';
import { abortQuietly, type Engine } from '@islet/engine';
import { FILES_BINDING_NAMES, isFileSandboxDenial, isFilesBinding } from '@islet/kernel-sandbox';
import { isFinalStatus, type LogLineRecord } from '@islet/protocol';
import {
  createReplayingHandler,
  createRunLifecycle,
  headOf,
  type RunHead,
  type RunTimings,
} from '@islet/runs';
import { afterward } from './afterward.ts';
import { CallParking } from './call-parking.ts';
import { createFilesCalls } from './files-calls.ts';
import { createLiveLog } from './live-log.ts';
import { mapOutcome } from './outcome-mapping.ts';
import { waitReleased } from './released-wait.ts';
import { createRunEnds } from './run-ends.ts';
import {
  cancelledOf,
  type ExecuteJob,
  type ExecuteResult,
  endedResult,
  HandBackError,
  handedBackOf,
  type Replay,
  type RunExecutorDeps,
  stopSignalOf,
} from './run-executor-types.ts';
import { createRunMetrics } from './run-metrics.ts';

export { type ExecuteJob, HandBackError } from './run-executor-types.ts';

/** What serves an execution's calls (made at its first call). */
interface CallSide {
  parking: CallParking | undefined;
  replaying: ReturnType<typeof createReplayingHandler>;
}

/** Live output goes out at once when this much has gathered (a busy printer sends ~64 KiB events). */
const LIVE_LOG_BATCH_BYTES = 64 * 1024;

/** ms since epoch with sub-ms precision, comparable across processes on one machine (core's wall-clock.ts). */
const now = wallNow;

export function createRunExecutor(deps: RunExecutorDeps) {
  const { runs, settings, journal, metrics, logger } = deps;
  // The clock's offset read now (a few ms of spinning, once), not at the first run's pick-up.
  now();
  const lifecycle = createRunLifecycle({ runs, journal });

  // The end's stage stamps are taken only where the run store keeps them (run-executor-types.ts).
  const stamps = deps.stageTimings !== false;
  const runMetrics = createRunMetrics(metrics, deps.meteredTenants);
  const { meter, end, giveUp } = createRunEnds(runs, lifecycle, runMetrics);

  async function execute(job: ExecuteJob, replay?: Replay): Promise<ExecuteResult> {
    const pickedUp = replay?.pickedUp ?? (stamps ? now() : 0);
    // One round trip: the record, and (unless it ended or is being cancelled) the attempt counted,
    // its start recorded (Running, status event, wake-up) and the journal read, in one script.
    // The job's lease rides in its first start; refused, nothing of the run was touched.
    // A fetch that began the attempt: its answer read in this turn, so the program reaches its
    // host in the processor's own turn (round 42 `pickup-floor`); else the attempt's script.
    const begun =
      (replay ? undefined : lifecycle.fetchedAttempt(job.lease)) ??
      (await lifecycle.beginAttempt(job.runId, replay ? undefined : job.lease));
    if (begun.deferred) return 'deferred';
    const run = begun.run;
    if (!run) {
      logger.warn({ runId: job.runId }, 'job for a run that does not exist; dropped');
      return 'skipped';
    }
    if (isFinalStatus(run.status)) return 'skipped';
    const attempt = begun.attempt;
    if (run.cancelRequested || attempt === undefined) {
      await end(run, 'Cancelled', 'Cancelled', 'abort', 'the run was cancelled before it started');
      return 'cancelled';
    }
    // The limits fixed at acceptance; Code Mode's switch was checked then, so a replay after a
    // decision behaves as the first execution did even if an admin changed the settings meanwhile.
    let limits = run.request.limits;
    if (!limits) {
      const current = await settings.get();
      if (!current.codeMode.enabled) {
        await end(
          run,
          'Failed',
          'Unavailable',
          'sandbox-unavailable',
          'Code Mode is off in the platform settings',
        );
        return 'failed';
      }
      limits = {
        timeoutMs: run.request.timeoutMs ?? current.codeMode.timeoutMs,
        memoryMb: current.codeMode.memoryMb,
        outputBytes: current.codeMode.outputBytes,
        outputCap: 'shared',
      };
    }
    const facts = deps.sandboxFacts?.(job.mode);
    if (deps.requireFullEnforcement && facts?.enforcement !== 'full') {
      metrics.sandboxUnavailableRuns.inc({ mode: job.mode });
      await end(
        run,
        'Failed',
        'Unavailable',
        'sandbox-unavailable',
        `this deployment requires full file-sandbox enforcement, and this host enforces ${job.mode} only partially`,
      );
      return 'failed';
    }
    if (!replay) {
      const waitedS = Math.max(0, Date.now() - job.enqueuedAtMs) / 1000;
      afterward(() => runMetrics.queueWait(job.mode, waitedS));
    }
    const journaled = begun.entries;
    // The attempt's start (record Running, its status event with the attempt, the tagged wake-up)
    // was written by beginAttempt above, before anything of the program runs.

    const timeoutMs = limits.timeoutMs;
    // Made when first needed (a gateway call, an engine given no handle): the runner's job makes
    // its signals only when asked (run-job.ts).
    let signal: AbortSignal | undefined;
    // File bindings belong to run_code runs; Code Mode programs have no files.
    const workspaces = run.request.style !== 'code-mode' ? deps.workspaces : undefined;
    // Requests still open once the run ended for good (a deadline or a cancel while a call was
    // held) are closed, so no gateway keeps waiting on an answer nobody will read. Made at the
    // first gateway call: most runs make none. Aborted only with a call unanswered (`unanswered`):
    // with every call answered no gateway waits, and a batch whose last line was read may still be
    // open for its end; aborting it destroyed its kept-alive socket (undici), every run of
    // parallel calls (test/bench/README.md, round 30 `runner-cpu`).
    let callsOver: { controller: AbortController; signal: AbortSignal } | undefined;
    let unanswered = 0;
    // Every call this attempt sends goes through `live`: with none sent, the journal holds nothing
    // the end's push must read (run-store's `sentNoCall`).
    let sent = 0;
    // A refused file change marks the run's sandbox facts `denied`, so a run that fails (e.g. the
    // program did not catch the error) keeps `File sandbox: <mode>; enforcement: <e>; operation denied`.
    let denied = false;
    // What serves the program's calls (the files binding, parking, the replaying handler and its
    // stall timer) is made at its first call, on that call's turn: a run that makes none (most)
    // never builds it, and one that does has sent its program to the host first. The same as made
    // up front: before a call the replaying handler holds nothing (its timer acts only on held
    // outcomes, and each call restarts its stall clock), parking has nothing to park, files nothing
    // to do.
    let callSide: CallSide | undefined;
    // The execution is over (its engine call returned): a side made after it is closed at once.
    let over = false;
    const callSideOf = (): CallSide => {
      if (callSide) return callSide;
      const files = workspaces
        ? createFilesCalls({
            journal,
            events: runs,
            store: workspaces,
            metrics,
            run: { id: run.id, tenant: run.tenant, session: run.session, mode: job.mode },
            attempt,
            enforcement: facts?.enforcement ?? 'none',
          })
        : undefined;
      const parking = job.slot ? new CallParking(job.slot, deps.parkAfterMs ?? 100) : undefined;
      const live = async (call: Parameters<typeof deps.gateway.call>[2]) => {
        sent++;
        if (files && isFilesBinding(call.binding)) return files.call(call);
        if (!callsOver) {
          const controller = new AbortController();
          signal ??= stopSignalOf(job);
          callsOver = { controller, signal: AbortSignal.any([signal, controller.signal]) };
        }
        unanswered++;
        try {
          return await deps.gateway.call(run.id, attempt, call, callsOver.signal);
        } finally {
          unanswered--;
        }
      };
      const replaying = createReplayingHandler({
        journal: journaled,
        live: parking ? parking.wrap(live) : live,
        stallMs: Math.min(timeoutMs ?? 30_000, 30_000),
        onEvent: (e) => {
          if (e === 'replayed') metrics.bindingCalls.inc({ outcome: 'replayed' });
        },
      });
      callSide = { parking, replaying };
      if (over) {
        replaying.close();
        parking?.close();
      }
      return callSide;
    };
    const onCall: ReturnType<typeof createReplayingHandler>['handler'] = async (call, context) => {
      const outcome = await callSideOf().replaying.handler(call, context);
      if (isFilesBinding(call.binding) && isFileSandboxDenial(outcome)) denied = true;
      return outcome;
    };
    const bindings = run.request.bindings.map((b) => b.binding);
    const started = performance.now();
    const engineCalled = stamps ? now() : 0;
    const firstEngineCalled = replay?.firstEngineCalled ?? Date.now();
    const timeBudget = run.request.timeBudget ?? 'elapsed';
    // A replay after a release keeps the run's deadline: elapsed since the first execution began,
    // or (excluding binding waits) what the executions before it counted.
    const spentMs = !replay
      ? 0
      : timeBudget === 'elapsed'
        ? Date.now() - firstEngineCalled
        : replay.budgetSpentMs;
    let outcome: Awaited<ReturnType<Engine['execute']>>;
    // A replay prints again from the top: each event carries its attempt, so a reader can start over.
    // Made at the program's first lines: a run that prints nothing (most) makes none, and has none
    // to wait for before its end (the same as one made up front: until lines come it sends nothing).
    const liveTerms = deps.liveLog && deps.liveLog.maxBytes > 0 ? deps.liveLog : undefined;
    let liveLog: ReturnType<typeof createLiveLog> | undefined;
    const onLog = liveTerms
      ? (lines: LogLineRecord[]) => {
          liveLog ??= createLiveLog({
            ...liveTerms,
            batchBytes: LIVE_LOG_BATCH_BYTES,
            append: (data) => runs.appendEvent(run.id, 'log', { ...data, attempt }, 'log'),
            onError: (err) => logger.warn({ err, runId: run.id }, 'live output could not be sent'),
          });
          liveLog.push(lines);
        }
      : undefined;
    // No handle: the engine listens to the signal (a caller other than the runner's processor).
    if (!job.stopEngine) signal ??= stopSignalOf(job);
    try {
      outcome = await deps.engineFor(job.mode).execute(run.code, {
        // `concat`, not spread: a spread walks both lists' iterators (a result an element).
        bindings: workspaces ? bindings.concat(FILES_BINDING_NAMES) : bindings,
        onCall,
        ...(onLog ? { onLog } : {}),
        limits: {
          timeoutMs,
          timeBudget,
          ...(spentMs > 0 ? { spentMs } : {}),
          memoryMb: limits.memoryMb,
          outputBytes: limits.outputBytes,
          outputCap: limits.outputCap,
        },
        clockMs: run.clockMs,
        randomSeed: run.seed,
        // The runner's own handle when it gave one (no EventTarget listener a run), else the signal.
        ...(job.stopEngine ? { cancel: job.stopEngine } : { signal }),
        partition: run.tenant,
        ...(facts ? { sandbox: facts } : {}),
      });
    } finally {
      over = true;
      callSide?.replaying.close();
      callSide?.parking?.close();
      // What was printed goes out before the end is written: `log` events precede `end`.
      if (liveLog) await liveLog.close();
    }
    const parking = callSide?.parking;
    if (parking?.released && job.slot) {
      const deadlineAt =
        timeBudget === 'elapsed' && typeof timeoutMs === 'number' ? firstEngineCalled + timeoutMs : undefined;
      const waited = await waitReleased(
        { cancel: job.cancel, handBack: job.handBack },
        parking,
        outcome,
        deadlineAt,
        timeoutMs,
      );
      if (waited === 'answered') {
        await job.slot.resume();
        logger.debug({ runId: run.id, attempt }, 'released run answered; replaying from its journal');
        return execute(job, {
          pickedUp,
          firstEngineCalled,
          budgetSpentMs: outcome.budgetSpentMs ?? spentMs,
        });
      }
      if (waited !== 'interrupted') outcome = waited;
    }
    // A resume's lease take-back was not awaited (run-slot.ts): one sent answers before the end
    // (whose script gives the lease back) is sent, so the two reach Redis in order.
    const settling = job.slot?.leaseEnding?.();
    if (settling) await settling;
    if (callsOver && unanswered > 0) abortQuietly(callsOver.controller);
    const elapsedSeconds = (performance.now() - started) / 1000;
    const timings: RunTimings | undefined = stamps
      ? {
          enqueued: job.enqueuedAtMs,
          ...(job.fetchedAtMs !== undefined ? { fetched: job.fetchedAtMs } : {}),
          pickedUp,
          engineCalled,
          engineReturned: now(),
          ...(outcome.hostWaitMs !== undefined ? { hostWaitMs: outcome.hostWaitMs } : {}),
        }
      : undefined;
    if (denied && outcome.sandbox) outcome.sandbox = { ...outcome.sandbox, denied: true };

    if (handedBackOf(job) && !cancelledOf(job))
      throw new HandBackError('runner shutting down; run handed back');
    const mapped = mapOutcome(outcome);
    // Latency by outcome (bounded labels): a slow Completed and a slow timeout are different pages.
    const durationStatus =
      mapped.kind === 'final' ? mapped.status : mapped.kind === 'cancelled' ? 'Cancelled' : 'Waiting';
    const durationKind =
      mapped.kind === 'final' ? mapped.failureKind : mapped.kind === 'cancelled' ? 'abort' : 'none';
    afterward(() => runMetrics.duration(job.mode, durationStatus, durationKind, elapsedSeconds));
    if (mapped.kind === 'suspended') {
      // The gateway already set Waiting and published the decision; the job ends, the slot frees.
      // (No status write here: the gateway set Waiting when it asked, and a quick answer may
      // already have resumed the run in a newer execution.)
      return 'waiting';
    }
    // The run has no decisions when this is its first attempt's only execution (no decision
    // round's job, no replay after a release, no resume: those begin a later attempt or replay),
    // it sent no call (a call's decision is asked on the call) and asked no wider access (asked
    // before its first attempt): its end then sends no EXPIRE for the decisions hash (round 48,
    // run-store `noDecisions`). In doubt, the end expires it.
    const noDecisions = !replay && attempt === 1 && sent === 0 && !run.request.sandboxPermissions;
    if (mapped.kind === 'cancelled') {
      const latest = await runs.get(run.id);
      if (!cancelledOf(job) && !latest?.cancelRequested) {
        // Stopped because a newer execution owns the run (a stalled job taken over): leave it to that one.
        logger.info({ runId: run.id, attempt }, 'execution superseded; leaving the run to the newer one');
        return 'superseded';
      }
      if (timings) timings.endSent = now();
      // Counted once the end is known written (an end handed to the job's completion is written
      // after this returns).
      await lifecycle.finish(run, {
        status: 'Cancelled',
        result: mapped.result,
        text: mapped.text,
        kind: 'abort',
        timings,
        usage: { bindingCalls: outcome.calls.length, cpuMs: outcome.cpuMs ?? 0 },
        sentNoCall: sent === 0,
        noDecisions,
        onEnded: (ended) => {
          if (!ended) return;
          runMetrics.ended('Cancelled', 'abort', job.mode);
          meter(run, 'Cancelled', mapped.text, outcome.calls.length, outcome.cpuMs);
        },
      });
      return 'cancelled';
    }
    if (timings) timings.endSent = now();
    await lifecycle.finish(run, {
      status: mapped.status,
      result: mapped.result,
      text: mapped.text,
      textIsResult: mapped.textIsResult === true,
      kind: mapped.failureKind,
      timings,
      usage: { bindingCalls: outcome.calls.length, cpuMs: outcome.cpuMs ?? 0 },
      sentNoCall: sent === 0,
      noDecisions,
      onEnded: (ended) => {
        if (!ended) return;
        runMetrics.ended(mapped.status, mapped.failureKind, job.mode);
        meter(run, mapped.status, mapped.text, outcome.calls.length, outcome.cpuMs);
        if (mapped.result._tag === 'Failed' && mapped.result.reason === 'ReplayMismatch')
          metrics.replayMismatches.inc();
      },
    });
    return endedResult(mapped.status);
  }

  /** The record's head, for the recovery loop (null: no record). */
  async function head(runId: string): Promise<RunHead | null> {
    const run = await runs.get(runId);
    return run && headOf(run);
  }

  /** A fetch's start terms that also take the run's lease and begin its attempt (parking-worker.ts). */
  const fetchedStart = lifecycle.fetchedStart;

  return { execute, giveUp, head, fetchedStart };
}

/** An executor; one without `fetchedStart` (a test's) leaves every start to its processor. */
export type RunExecutor = Omit<ReturnType<typeof createRunExecutor>, 'fetchedStart'> &
  Partial<Pick<ReturnType<typeof createRunExecutor>, 'fetchedStart'>>;
