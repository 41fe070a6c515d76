/**
 * A run's end handed to its job's completion (ParkingWorker.deferEnd, parking-worker.ts): the
 * worker's scripts fused with end-complete-store.ts once, the end kept until the completion runs it,
 * or the completion sent at once (`completeAtEnd`).
 */
import type { RedisClient } from 'bullmq';
import { CompletionArgsWriter } from './completion-args.ts';
import { completingExec, type PendingEnd } from './end-complete-store.ts';
import type { OneSlotMap } from './one-slot-map.ts';
import type { ExecScripts, FetchStart } from './parking-worker-types.ts';
import type { SlotGate } from './slot-gate.ts';

/** What the end reads and writes of its worker (its private maps, counters and state). */
export interface DeferEndHost {
  scripts: ExecScripts | undefined;
  pendingEnds: OneSlotMap<string, PendingEnd>;
  /**
   * Completions sent as their run's end was handed over (`completeAtEnd`), by job id: their
   * arguments and answer, until BullMQ's own completion takes them.
   */
  sentEarly: OneSlotMap<string, SentEarly>;
  started: OneSlotMap<string, unknown>;
  keptFor: OneSlotMap<string, string>;
  fetchStart: FetchStart | undefined;
  gate: SlotGate | undefined;
  isClosing(): boolean;
  /** The worker is registered idle, its pop under way (handoff-wait.ts `registered`). */
  idleRegistered(): boolean;
  /** Counts a completion that ran its run's end (`fusedCompletions`). */
  fused(): void;
  /** Counts a completion that also started its next job's run (`completionStarts`). */
  completionStarted(): void;
}

/**
 * The run's end (`finish-run-release-19`'s keys and arguments) goes with the job's completion
 * (end-complete-store.ts); resolves with the end's answer, rejects when neither the fused call
 * nor the end's own script after it answered. Undefined: this worker cannot fuse (BullMQ's
 * scripts are not where this expects them), the caller runs the end itself. `slotToken`: the
 * ended run holds its slot (the job's token); a next job the completion brings then has its run
 * started in the same call and takes that slot (`SlotGate.keepFor`), unless a parked run waits
 * for one (it goes first; the next job then starts as BullMQ's own).
 */
export function deferRunEnd(
  host: DeferEndHost,
  jobId: string,
  keys: string[],
  args: (string | number)[],
  slotToken?: string,
): Promise<unknown> | undefined {
  const scripts = host.scripts;
  if (!scripts || typeof scripts.execCommand !== 'function' || host.pendingEnds.has(jobId)) return undefined;
  if (!scripts.fused) {
    const exec = scripts.execCommand.bind(scripts);
    scripts.execCommand = completingExec(
      scripts.version,
      exec,
      (id) => {
        const end = host.pendingEnds.get(id);
        if (end) {
          host.pendingEnds.delete(id);
          host.fused();
        }
        return end;
      },
      () => host.isClosing(),
      (id) => {
        const sent = host.sentEarly.get(id);
        if (sent) host.sentEarly.delete(id);
        return sent?.answer;
      },
    );
    // BullMQ's completion of a job whose completion went already builds no arguments again: it
    // gets those sent (its `finishedOn` then reads the timestamp Redis stored).
    // Built with the completion's fixed parts made once a worker (completion-args.ts), BullMQ's own elsewhere.
    const writer = scripts.moveToCompletedArgs ? CompletionArgsWriter.of(scripts) : undefined;
    scripts.completionArgs = writer;
    const argsOf = writer ? writer.args.bind(writer) : scripts.moveToCompletedArgs?.bind(scripts);
    if (argsOf)
      scripts.moveToCompletedArgs = (job, ...rest) =>
        host.sentEarly.get(String((job as { id?: unknown }).id))?.args ?? argsOf(job, ...rest);
    scripts.fused = true;
  }
  const start = host.fetchStart;
  const gate = host.gate;
  // Registered idle (the queue was drained when this worker's loop last looked): its pop is under
  // way, and every job queued since either was handed to it or set the queue's marker, which wakes
  // it, so its own loop fetches that job, with a slot reserved and the run started in the fetch.
  // The completion then fetches nothing (no start terms either: 24 arguments, their building and
  // Redis's copy of them). It could find one: the registration was taken by a submit's hand-off and
  // more submits queued behind it while the pop's answer was on its way (16 clients at an idle
  // runner). Fetched here, that job came without its run's start and without the ended run's slot
  // kept for it, and waited in the slot gate while every other slot passed from each run's end to
  // the next job its completion started (`keepFor`): until the queue drained, 30 s and more under
  // a long burst (test/bench/README.md, round 32 `stall-hunt`).
  const registered = host.idleRegistered();
  const startNext =
    start && slotToken !== undefined && !host.isClosing() && !registered && (gate?.noResumeWaiting() ?? true)
      ? {
          start: () => start.start(),
          hooks: start,
          started: (nextId: string, begun: unknown) => {
            host.started.set(nextId, begun);
            host.keptFor.set(slotToken, nextId);
            gate?.keepFor(slotToken);
            host.completionStarted();
          },
        }
      : undefined;
  return new Promise((resolve, reject) =>
    host.pendingEnds.set(jobId, {
      keys,
      args,
      resolve,
      reject,
      ...(startNext ? { startNext } : {}),
      ...(registered ? { fetchNone: true as const } : {}),
    }),
  );
}

/** A completion sent at its run's end's hand-over: what was sent, and its answer. */
export interface SentEarly {
  args: unknown[];
  answer: Promise<unknown>;
}

/** The job's completion as BullMQ's `handleCompleted` would send it, known when the run's end is handed over. */
export interface CompletionTerms {
  job: { id?: string; opts: { removeOnComplete?: unknown } };
  token: string;
  /** The processor's return value (BullMQ stores its JSON as the job's return value). */
  result: string;
  /** BullMQ's `fetchNextCallback() && !(closing || paused)`, read now. */
  fetchNext: boolean;
  /** The worker's client, once resolved (BullMQ's completion awaits `queue.client`). */
  client: RedisClient | undefined;
}

/**
 * Sends the job's completion, fused with its run's end just handed over (`deferRunEnd`), at once:
 * BullMQ's own completion would follow only once the processor has returned, through its
 * `processJob` tail, `handleCompleted` and `Job.moveToCompleted` (~60-90 µs of cold code a run
 * between the host's `done` and the end's write: test/bench/README.md, round 31 `runner-end`).
 * The arguments are BullMQ's own (`moveToCompletedArgs`, with the value the processor returns);
 * the call goes through the worker's wrapped `execCommand`, so it takes the pending end as BullMQ's
 * call would have. BullMQ's call comes after (its bookkeeping: the job's fields, events, the next
 * job) and gets these arguments and this call's answer (`sentEarly`), building and sending nothing. False: not sent (no fused
 * scripts, no client yet, no end pending); BullMQ's completion runs the end as before.
 */
export function completeAtEnd(host: DeferEndHost, jobId: string, terms: CompletionTerms): boolean {
  const scripts = host.scripts;
  if (
    !scripts?.fused ||
    typeof scripts.moveToCompletedArgs !== 'function' ||
    !terms.client ||
    !host.pendingEnds.has(jobId) ||
    host.sentEarly.has(jobId)
  )
    return false;
  const args = scripts.moveToCompletedArgs(
    terms.job,
    JSON.stringify(terms.result),
    terms.job.opts.removeOnComplete,
    terms.token,
    terms.fetchNext,
  );
  const answer = scripts.execCommand(terms.client, 'moveToFinished', args);
  // Its failure is BullMQ's completion's to meet (it gets this promise); the end's own script ran already.
  answer.catch(() => undefined);
  host.sentEarly.set(jobId, { args, answer });
  return true;
}
