/**
 * A BullMQ Worker whose concurrency covers slots and parked runs (slot-gate.ts) but which takes a
 * new job only while a slot is free for it. BullMQ's main loop fetches while it holds fewer jobs
 * than its concurrency; the gate is applied where a fetch moves a job to active, so a worker whose
 * slots are all busy waits there (holding no job it cannot start) and fetches the moment a run
 * parks or ends. BullMQ fetches several jobs in a row before it starts any (it starts them only
 * when a fetch brings none), so while a job it fetched has not started, a fetch answers "no job"
 * at once without asking Redis: the job starts now, and the next fetch goes out while it runs
 * (otherwise every pick-up waited for an empty fetch's round trip before its processor ran). Jobs
 * BullMQ fetches with a completion (moveToCompleted's next job) skip this point; they wait for a
 * slot in the processor (`SlotGate.take`), at most one at a time.
 *
 * No fetch for nothing. BullMQ fetches speculatively (again after every job it gets) and its fetch
 * script is costly even when it finds nothing; and each job it hands out re-adds the queue's marker, which
 * the worker, once the queue is empty, pops at once and answers with a second empty fetch. A
 * speculative fetch here first looks at the queue (`claimDrained`: the ready lists and that stale
 * marker, in one cheap transaction); with nothing ready it answers "no job" as BullMQ's empty fetch
 * would (the queue is drained: the worker blocks on the marker, which only a new job sets). A fetch
 * woken by the marker goes straight to BullMQ's (a job's marker, as the look drops the stale one;
 * another runner's fetch may still leave one, as in BullMQ).
 *
 * The fetch starts the run. With `fetchStart` (one server, fair share on) a fetch that goes to
 * Redis is BullMQ's script with the run's lease and attempt start after it, in one call
 * (fetch-start-store.ts); the answer waits here until the processor takes it (`takeFetchedStart`).
 * So does a completion that ends its run and brings the worker's next job (`deferEnd`,
 * end-complete-store.ts): the ended run's slot is kept for that job. A start no processor took
 * gives its lease back.
 *
 * Direct hand-off (`enableHandOff`; its idle wait and close in handoff-wait.ts, their Redis calls
 * in handoff-store.ts): while it blocks idle with a slot reserved, the worker is registered, and a
 * submit may run that same fetch for it in its add's script; the blocking pop then brings the job
 * and its run's start, and BullMQ's next fetch gets it from here. That hand-off's methods
 * (`enableHandOff`, `takeHanded`, `startHanded`, `takeHandedOnce`) moved to
 * parking-worker-handoff.ts, the class this one extends.
 */
import type { Job, RedisClient, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { runEndAlone } from './end-complete-store.ts';
import { startingClient } from './fetch-start-store.ts';
import { giveBackClosing, giveBackUntaken, refuseClosing } from './parking-worker-close.ts';
import { completeAtEnd, type DeferEndHost, deferRunEnd } from './parking-worker-end.ts';
import { ParkingWorkerHandOff } from './parking-worker-handoff.ts';
import type { ExecScripts } from './parking-worker-types.ts';
import { claimDrained } from './queue-drain-store.ts';

export type { FetchStart } from './parking-worker-types.ts';

export class ParkingWorker<DataType> extends ParkingWorkerHandOff<DataType> {
  /**
   * The run's end goes with the job's completion: `deferRunEnd` (parking-worker-end.ts). With
   * `complete` (the job, its token and what its processor returns), the completion is sent now
   * (`completeAtEnd`), not once the processor has returned.
   */
  deferEnd(
    jobId: string,
    keys: string[],
    args: (string | number)[],
    slotToken?: string,
    complete?: { job: Job<DataType>; token: string; result: string },
  ): Promise<unknown> | undefined {
    const host = this.endHost();
    const ended = deferRunEnd(host, jobId, keys, args, slotToken);
    if (!ended || !complete) return ended;
    const bull = this as unknown as { connection: { closing: boolean }; paused: boolean };
    // BullMQ's `handleCompleted` sends nothing once its connection closes, nor does this; an end
    // before the client resolved goes with BullMQ's call.
    if (bull.connection.closing || !this.readyClient) return ended;
    const fetchNext = (this.fetchNexts.get(complete.token)?.() ?? true) && !(this.closing || bull.paused);
    if (completeAtEnd(host, jobId, { ...complete, fetchNext, client: this.readyClient }))
      this.completionsAtEnd++;
    return ended;
  }

  /** `deferEnd`'s view of this worker, made at its first end (`endHostOf`), not an object and four closures a run. */
  private deferEndHost: DeferEndHost | undefined;

  private endHost(): DeferEndHost {
    this.deferEndHost ??= endHostOf(this);
    return this.deferEndHost;
  }

  protected override async moveToActive(
    client: RedisClient,
    token: string,
    name?: string,
  ): Promise<Job<DataType>> {
    // BullMQ's loop stops fetching on this answer and starts the job it holds, which takes that
    // job's token out of the set; so this never spins.
    // Closing: no job, whichever path asks (BullMQ's loop, a failure's fetch-next). BullMQ's own
    // check (`closing`) comes only after the hand-off's close, and a run handed back meanwhile
    // (due in 50 ms) was fetched again here and run by this very runner.
    // Started from the pop's answer: BullMQ's loop gets it whatever comes (closing too), so its
    // processJob is in the loop's queue and its close waits for it.
    const direct = this.direct;
    if (direct?.running && !direct.fetched) {
      direct.fetched = true;
      // Fetched, not yet begun in the loop: a fetch before it answers "no job" (as for any other).
      this.unstarted.add(direct.token);
      return direct.job;
    }
    if (this.isClosing) return refuseClosing(this.closeHost);
    // Handed over (popped, even as the close removed the registration): already this worker's.
    const handed = this.handOffWait?.take();
    if (handed) return this.takeHandedOnce(handed);
    if (this.unstarted.size > 0) {
      if (this.handOffWait?.owed) await this.handOffWait.settle();
      // A job fetched inside a processJob (a deferred job's fetch in BullMQ's handleFailed) reaches
      // the loop only when that processJob returns, and its end may wait on Redis (the start it
      // gives back): answered at once, the loop would fetch again in promises only, the reply
      // never read, the runner frozen with every job it holds (the defer-probe's stuck run).
      if (this.inProcessJob()) await new Promise((resolve) => setImmediate(resolve));
      return undefined as unknown as Job<DataType>;
    }
    // The job just fetched (or handed over) left the queue drained: this fetch can only answer
    // "no job", after which the worker blocks (and registers idle). It first waits one turn of the
    // event loop, so the run's start, which BullMQ's loop interleaves with it, reaches its sandbox
    // host before it. A job started from the pop's answer had its turn already (the loop came to
    // this fetch a turn after it: handoff-wait.ts), and a second would let the run's end come
    // before the worker registers idle again (its completion then carries the next run's start).
    const turned = this.directTurned;
    this.directTurned = false;
    if (this.drainedBehind) {
      if (!turned) await new Promise((resolve) => setImmediate(resolve));
      this.deferredFetches++;
    }
    const gate = this.gate;
    if (!gate) return this.fetch(client, token, name);
    const go = await gate.whenFetchable(token, () => this.isClosing);
    if (this.isClosing) {
      gate.fetched(token, false);
      return refuseClosing(this.closeHost);
    }
    if (go === 'later') {
      gate.fetched(token, false);
      if (this.handOffWait?.owed) await this.handOffWait.settle();
      // Never a loop of promises only: the event loop (lock renewals, the runs' own I/O) goes first,
      // unless the job a completion started reaches BullMQ's loop before (handed-next.ts).
      await this.handedNext.pause();
      // The wake-up that led here may be spent: the next fetch must look at the queue itself,
      // not wait for another (BullMQ keeps this flag private).
      this.loop.drained = false;
      // No job: what BullMQ's own fetch answers when there is none; it then starts those it holds.
      return undefined as unknown as Job<DataType>;
    }
    let got = false;
    try {
      const job = await this.fetch(client, token, name);
      got = job !== undefined;
      return job;
    } finally {
      gate.fetched(token, got);
    }
  }

  private async fetch(client: RedisClient, token: string, name?: string): Promise<Job<DataType>> {
    const drainedBehind = this.drainedBehind;
    this.drainedBehind = false;
    // Woken by the marker: a job (or a due delayed one) announced itself; BullMQ fetches. Else
    // the previous fetch's look (its stale marker dropped then; a job added since set its own),
    // or a look now.
    if (this.loop.waiting === null && (drainedBehind || (await claimDrained(client, this.keys)))) {
      if (drainedBehind) this.drainedByFetch++;
      else this.drainedProbes++;
      if (this.handOffWait?.owed) await this.handOffWait.settle();
      // What BullMQ's empty fetch does: no delays pending (none is delayed), drained (emitted once).
      this.loop.updateDelays(0, 0);
      return this.nextJobFromJobData(undefined, undefined, token);
    }
    this.redisFetches++;
    const start = this.fetchStart;
    const starting =
      start && (await start.on())
        ? startingClient(
            client,
            () => start.start(),
            (jobId, begun) => this.started.set(jobId, begun),
            (drained) => {
              this.drainedBehind = drained;
            },
            start,
            // A take-back the pop left owed goes with this fetch (handoff-wait.ts `claimTakeBack`).
            this.claimTakeBack,
          )
        : client;
    const job = await super.moveToActive(starting, token, name);
    // No fused fetch went (BullMQ's own, or none): the take-back alone (a job handed meanwhile is
    // the next fetch's). Every path here that sends no fused fetch does so: a registration stands
    // no longer than a round trip past its pop, as with the take-back before the fetch.
    if (this.handOffWait?.owed) await this.handOffWait.settle();
    if (job) this.unstarted.add(token);
    return job;
  }

  /** The take-back owed, for the fused fetch that goes now (none owed: undefined). */
  private readonly claimTakeBack = () => this.handOffWait?.claimTakeBack();

  /**
   * The run start the fetch of job `jobId` made (its script's answer), taken once: the processor
   * passes it to the attempt's start instead of asking Redis again.
   */
  takeFetchedStart(jobId: string): unknown {
    const begun = this.started.get(jobId);
    this.started.delete(jobId);
    return begun;
  }

  /** Whether a job fetched but not started is one a processJob still holds (fetched in it). */
  private inProcessJob(): boolean {
    // The job started from the pop's answer is in a processJob already, but fetched outside it.
    const direct = this.direct?.token;
    for (const token of this.unstarted) if (this.processing.has(token) && token !== direct) return true;
    return false;
  }

  override async processJob(
    ...args: Parameters<Worker<DataType>['processJob']>
  ): ReturnType<Worker<DataType>['processJob']> {
    const token = args[1];
    const direct = this.direct;
    if (direct?.running && direct.job === args[0] && direct.token === token) {
      // BullMQ's loop reached the job started from the pop's answer: it gets that processJob.
      this.direct = undefined;
      this.unstarted.delete(token);
      direct.fetchNext = args[2];
      return direct.running;
    }
    this.unstarted.delete(token);
    this.handedNext.begun(token);
    // No fetch-next once closing, decided when BullMQ builds the completion (or failure), nor, with
    // starts in the fetch, while anyone waits for a slot: the slot this job frees goes to the one
    // waiting longest, where a job fetched here would take it (its run started, the slot kept for
    // it: `keepFor`) and pass it over (round 33 `slot-bound`). Without starts in the fetch (fair share
    // off, a Cluster) no completion keeps a slot: its next job waits in the gate in order, and
    // fetching it early pays (refusing it cost 7–12 % of the 16-client rate there, same README).
    const fetchNext = args[2];
    args[2] = () =>
      (fetchNext?.() ?? true) &&
      !this.isClosing &&
      !(this.fetchStart !== undefined && this.gate?.anyWaiting());
    // A job that reached the worker after its close began (a fetch-next or pop answered late):
    // back to the queue unrun, for another runner.
    if (this.isClosing) return giveBackClosing(this.closeHost, args[0], token);
    this.processing.add(token);
    this.fetchNexts.set(token, args[2]);
    // The start this job's fetch made: the only one its end may give back (a fetch of the same job
    // after its deferral, this processJob's own included, brings a start of its own).
    const id = args[0].id;
    const ownStart = id === undefined ? undefined : this.started.get(id);
    let next: Awaited<ReturnType<Worker<DataType>['processJob']>> | undefined;
    try {
      next = await super.processJob(...args);
      return next;
    } finally {
      // Not taken (the processor failed before its start): nothing of it is kept, and a slot
      // reserved for the job that never took it goes back. A next job the completion brought
      // started keeps the slot reserved for it (the same token); BullMQ dropped it: it goes back.
      // Given back before the slot frees: a fetch the freed slot makes must not find the lease
      // still counted in the pool (a full count there defers a job under contention).
      try {
        if (id !== undefined && ownStart !== undefined && this.started.get(id) === ownStart)
          await giveBackUntaken(this.closeHost, args[0], ownStart);
        const nextId = this.keptFor.get(token);
        this.keptFor.delete(token);
        if (nextId !== undefined && !next) this.started.delete(nextId);
        // A next job fetched under this token (a deferred job's fetch) keeps the slot reserved
        // for it: its fetch may hold its lease, and a lease must not wait for a slot.
        if (!next || (nextId === undefined && !this.unstarted.has(token))) this.gate?.fetched(token, false);
        // An end whose completion never ran it (the job failed or was moved after the end was
        // handed over, or BullMQ skipped its completion): written by its own script now.
        const end = id === undefined ? undefined : this.pendingEnds.get(id);
        if (id !== undefined && end) {
          this.pendingEnds.delete(id);
          await runEndAlone((await this.client) as unknown as Redis, end);
        }
      } finally {
        this.processing.delete(token);
        this.fetchNexts.delete(token);
        // Taken by BullMQ's completion; left only when it made none (the job failed after its end).
        if (id !== undefined) this.sentEarly.delete(id);
        // Last, with nothing awaited after it: the next job reaches BullMQ's loop with this return.
        if (next) this.handedNext.hand(token);
      }
    }
  }

  override async close(force = false): Promise<void> {
    // First, before any await: a job handed back meanwhile must not be fetched here again.
    this.stopping = true;
    this.gate?.wakeFetches();
    const idle = this.handOffWait;
    if (idle && !this.closing && !idle.closed) await idle.close();
    const closing = super.close(force);
    this.closeBegan();
    // A fetch waiting for a slot must not hold the close up: woken, it finds the worker closing.
    this.gate?.wakeFetches();
    return closing;
  }
}

/**
 * What the end (parking-worker-end.ts) reads and writes of `worker`, made once a worker: the fields
 * that may change (BullMQ's scripts, made once its client is ready; the fetch's start terms; the
 * gate) read through getters at each use, as the object made afresh for every run read them then.
 */
function endHostOf<DataType>(worker: ParkingWorker<DataType>): DeferEndHost {
  const w = worker as unknown as {
    scripts?: ExecScripts;
    pendingEnds: DeferEndHost['pendingEnds'];
    sentEarly: DeferEndHost['sentEarly'];
    started: DeferEndHost['started'];
    keptFor: DeferEndHost['keptFor'];
    fetchStart: DeferEndHost['fetchStart'];
    gate: DeferEndHost['gate'];
    isClosing: boolean;
    handOffWait?: { registered: boolean };
    fusedCompletions: number;
    completionStarts: number;
  };
  return {
    get scripts() {
      return w.scripts;
    },
    pendingEnds: w.pendingEnds,
    sentEarly: w.sentEarly,
    started: w.started,
    keptFor: w.keptFor,
    get fetchStart() {
      return w.fetchStart;
    },
    get gate() {
      return w.gate;
    },
    isClosing: () => w.isClosing,
    idleRegistered: () => w.handOffWait?.registered ?? false,
    fused: () => {
      w.fusedCompletions++;
    },
    completionStarted: () => {
      w.completionStarts++;
    },
  };
}
