/**
 * ParkingWorker's state (parking-worker.ts): the maps and flags its fetch, hand-off, end and
 * processJob share, the counters tests read, its close's beginning, and the views of it its
 * helpers take (`closeHost`: parking-worker-close.ts; `loop`: BullMQ's fetch-loop privates). Apart
 * from the behaviour so each file stays under ~400 lines; the behaviour is ParkingWorker's.
 */
import { type JobJsonRaw, type RedisClient, Worker } from 'bullmq';
import type { PendingEnd } from './end-complete-store.ts';
import { HandedNext } from './handed-next.ts';
import type { HandOff, HandOffWait } from './handoff-wait.ts';
import { OneSlotMap } from './one-slot-map.ts';
import { OneSlotSet } from './one-slot-set.ts';
import type { CloseHost } from './parking-worker-close.ts';
import type { SentEarly } from './parking-worker-end.ts';
import type { FetchLoopState, FetchStart } from './parking-worker-types.ts';
import { RunJobBuilder } from './run-job-build.ts';
import type { SlotGate } from './slot-gate.ts';

/**
 * The maps and sets below go from one entry to none every run at one client: each holds its first
 * entry in fields in front of a `Map`/`Set` (one-slot-map.ts), which a delete to empty would
 * otherwise make a new table for (test/bench/README.md, round 40 `runner-alloc`).
 */
export class ParkingWorkerState<DataType> extends Worker<DataType> {
  gate: SlotGate | undefined;
  fetchStart: FetchStart | undefined;
  /** Answers of run starts made by fetches, by job id, until the processor takes them. */
  protected readonly started = new OneSlotMap<string, unknown>();
  /** Tokens of jobs a fetch brought that BullMQ has not handed to `processJob` yet. */
  protected readonly unstarted = new OneSlotSet<string>();
  /** A "later" fetch's pause, ended as a completion's next job reaches BullMQ's loop (handed-next.ts). */
  readonly handedNext = new HandedNext();
  /** Tokens of the processJob calls under way (a fetch inside one brings a job under its token). */
  protected readonly processing = new OneSlotSet<string>();
  /** Fetches that went to Redis (tests read it: the count, never a duration). */
  redisFetches = 0;
  /** Looks at the queue that found it drained, so no fetch went (tests read it). */
  drainedProbes = 0;
  /** Speculative fetches answered by what the last fetch saw behind its job: no look went (tests read it). */
  drainedByFetch = 0;
  /** Fetches that first let a turn of the event loop pass, the job before them drained the queue (tests read it). */
  deferredFetches = 0;
  /** The last fetch that started its run found the queue drained behind its job; for the next fetch only. */
  protected drainedBehind = false;
  /** Run ends handed to their job's completion (`deferEnd`), by job id, until it runs them. */
  protected readonly pendingEnds = new OneSlotMap<string, PendingEnd>();
  /** Completions that ran their run's end in the same script (tests read it). */
  fusedCompletions = 0;
  /** Completions sent as their run's end was handed over (`completeAtEnd`; tests read it). */
  completionsAtEnd = 0;
  /** Their answers, by job id, until BullMQ's own completion call takes them. */
  protected readonly sentEarly = new OneSlotMap<string, SentEarly>();
  /** Each job's `fetchNext` callback as its `processJob` was given it (wrapped), by token. */
  protected readonly fetchNexts = new OneSlotMap<string, () => boolean>();
  /** The worker's client once resolved: a completion sent at the end's hand-over goes on it. */
  protected readyClient: RedisClient | undefined;
  /** Tokens whose completion brought a next job started (its id): its slot stays reserved for it. */
  protected readonly keptFor = new OneSlotMap<string, string>();
  /** Completions that also started their next job's run (tests read it). */
  completionStarts = 0;
  /**
   * Set as `close` is called, before the hand-off's close and BullMQ's (which set `closing` only
   * after it): from then on this worker takes no job by any path (fetch, fetch-next, hand-off).
   */
  protected stopping = false;
  /** Resolves once BullMQ's close began (`closing` set: its loop then ends). */
  protected readonly bullClosing: Promise<void>;
  protected closeBegan: () => void = () => undefined;
  /** Fetches refused because the worker was closing (tests read it). */
  fetchesRefusedClosing = 0;
  /** Jobs that reached this worker after its close began (a fetch-next or a pop in flight), given back unrun (tests read it). */
  jobsGivenBackClosing = 0;
  /** Direct hand-off: set (mode-worker.ts, with `fetchStart`) to let submits hand jobs to this worker while idle. */
  handOff: HandOff | undefined;
  /** Its idle wait (handoff-wait.ts), with `handOff`. */
  protected handOffWait: HandOffWait<DataType> | undefined;
  /** Jobs taken from a hand-off (the pop's or a fetch's), with no fetch of their own (tests read it). */
  handOffs = 0;
  /** Registrations written (tests read it). */
  get idleRegistrations(): number {
    return this.handOffWait?.registrations ?? 0;
  }
  /** `TAKE_BACK`s sent, one per pop that brought no hand-off (tests read it). */
  get idleTakeBacks(): number {
    return this.handOffWait?.takeBacks ?? 0;
  }

  constructor(...args: ConstructorParameters<typeof Worker<DataType>>) {
    super(...args);
    void this.client.then(
      (client) => {
        this.readyClient = client;
      },
      () => undefined,
    );
    this.bullClosing = new Promise((resolve) => {
      this.closeBegan = resolve;
    });
  }

  /** Builds the jobs it fetches, their options' text decoded once (run-job-build.ts). */
  readonly jobBuilder = new RunJobBuilder();

  protected override createJob(data: JobJsonRaw, jobId: string): ReturnType<Worker<DataType>['createJob']> {
    return this.jobBuilder.build(this, data, jobId) as ReturnType<Worker<DataType>['createJob']>;
  }

  /** The worker's two client promises, once `waitUntilReady` saw both fulfilled. */
  private readyPromises: readonly [Promise<RedisClient>, Promise<RedisClient>] | undefined;

  /**
   * BullMQ's `waitUntilReady` (worker.js: the client awaited, then the blocking client's promise
   * returned) is awaited by every job's `moveToCompleted`. As an async function it resolves its
   * promise with the blocking client, BullMQ's Proxy, so V8 reads the Proxy's `then` (its `get`
   * trap; round 51 `runner-cpu`: the one trap read a run left) and adopts the promise in two more
   * microtasks. Once both promises were fulfilled, and while the worker holds the same two, the
   * blocking client's promise is the same answer, already settled.
   */
  override waitUntilReady(): Promise<RedisClient> {
    const client = this.client;
    const blocking = (this as unknown as { blockingConnection?: { client: Promise<RedisClient> } })
      .blockingConnection?.client;
    const kept = this.readyPromises;
    if (kept !== undefined && kept[0] === client && kept[1] === blocking) return blocking;
    const ready = super.waitUntilReady();
    if (blocking !== undefined) {
      // Fulfilled: `client` awaited by BullMQ's, `blocking` by ours (the promise BullMQ returned
      // when the connection was not replaced meanwhile; if it was, the pair does not match again).
      void Promise.all([ready, blocking]).then(
        () => {
          this.readyPromises = [client, blocking];
        },
        () => undefined,
      );
    }
    return ready;
  }

  /** Whether the close began: read where a job could be taken, at the moment it would be. */
  get isClosing(): boolean {
    return this.stopping || this.closing !== undefined;
  }

  /** What the close's give-backs (parking-worker-close.ts) read and write of this worker. */
  protected get closeHost(): CloseHost {
    return {
      started: this.started,
      keptFor: this.keptFor,
      gate: this.gate,
      fetchStart: this.fetchStart,
      handOffWait: this.handOffWait,
      bullClosing: this.bullClosing,
      refused: () => {
        this.fetchesRefusedClosing++;
      },
      givenBack: () => {
        this.jobsGivenBackClosing++;
      },
      emitError: (err) => this.emit('error', err),
    };
  }

  protected get loop(): FetchLoopState {
    return this as unknown as FetchLoopState;
  }
}
