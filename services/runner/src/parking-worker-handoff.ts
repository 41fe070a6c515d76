/**
 * ParkingWorker's direct hand-off (parking-worker.ts's top comment: `enableHandOff`): the idle
 * wait's installation, a handed job taken as BullMQ's fetch would have brought it, and its
 * processor started in the pop's answer's own turn (`startHanded`). Moved out of parking-worker.ts
 * (a pure move) as the class ParkingWorker extends, as parking-worker-state.ts is for its state.
 */
import type { Job, Worker } from 'bullmq';
import { version } from 'bullmq/dist/esm/version.js';
import { fetchedAnswer } from './fetch-start-store.ts';
import { type Handed, nextJobData } from './handoff-store.ts';
import { type HandOff, HandOffWait, type WaitForJob } from './handoff-wait.ts';
import { ParkingWorkerState } from './parking-worker-state.ts';
import { FROM_JSON_VERSION } from './run-job-build.ts';

/** The BullMQ version whose fetch-to-processJob chain `startHanded` restates (its worker.js). */
const DIRECT_START_VERSION = FROM_JSON_VERSION;

/** A job started from the pop's answer, until BullMQ's loop reaches it (`startHanded`). */
export interface DirectStart<DataType> {
  job: Job<DataType>;
  token: string;
  running: ReturnType<Worker<DataType>['processJob']> | undefined;
  /** BullMQ's fetch got it (`moveToActive`). */
  fetched: boolean;
  /** The main loop's `fetchNext`, once its `processJob` call came. */
  fetchNext: (() => boolean) | undefined;
}

export class ParkingWorkerHandOff<DataType> extends ParkingWorkerState<DataType> {
  /** A handed job's processor starts from the pop's answer (`startHanded`); false: BullMQ's chain. */
  directStart = DIRECT_START_VERSION === version;
  protected direct: DirectStart<DataType> | undefined;
  /** The loop's next fetch comes a turn after the job started from the pop's answer. */
  protected directTurned = false;

  /** Starts watching for hand-offs: BullMQ's marker wait becomes the registration and a pop on both keys. */
  enableHandOff(handOff: HandOff): void {
    this.handOff = handOff;
    const idle = new HandOffWait(handOff, this as Worker<DataType>, {
      gate: () => this.gate,
      start: () => this.fetchStart,
      unstarted: () => this.unstarted.size > 0,
      waiting: () => this.loop.waiting,
      closing: () => this.isClosing,
      direct: (handed) => this.startHanded(handed),
    });
    this.handOffWait = idle;
    const self = this as unknown as { waitForJob: WaitForJob };
    const wait = self.waitForJob.bind(this);
    self.waitForJob = (bclient, blockUntil) => idle.wait(wait, bclient, blockUntil);
  }

  /** A handed job as BullMQ's fetch would have brought it, its run's start kept for the processor. */
  private async takeHanded(handed: Handed): Promise<Job<DataType>> {
    const reply = handed.answer;
    fetchedAnswer(
      reply,
      (jobId, begun) => this.started.set(jobId, begun),
      (drained) => {
        this.drainedBehind = drained;
      },
    );
    // Read by index, not destructured: every hand-off (array destructuring walks the iterator).
    const next = nextJobData(reply);
    this.loop.updateDelays(next[2], next[3]);
    const job = await this.nextJobFromJobData(next[0], next[1], handed.token);
    if (job) {
      this.unstarted.add(handed.token);
      this.handOffs++;
    }
    return job;
  }

  /**
   * A handed job's processor started in the pop's answer's own turn, not after BullMQ's chain to
   * it (`waitForJob`'s race, `_getNextJob`, the fetch, `nextJobFromJobData`'s `retryIfFailed`, the
   * main loop's queue: ~190 µs cold before the processor's first line, test/bench/README.md round
   * 40 `seq-stages` §2). What that chain does for a job is done here first, as it would do it: the
   * fetch's answer read (`takeHanded`), the job built under the registration's token, `drained`
   * cleared and `active` emitted (`nextJobFromJobData`), then BullMQ's own `processJob` (its lock
   * renewal's tracking, its completion and failure handling). The chain still runs, a turn later
   * (handoff-wait.ts): its fetch gets this job (`moveToActive`) and its `processJob` this one's
   * promise (the same one in the main loop's queue, so its concurrency count, `close()`'s wait
   * and the next job a completion brings are BullMQ's as before); until then the job's completion
   * fetches no next job (the loop's `fetchNext` is not known yet). A job scheduler's job (its
   * next iteration added in `nextJobFromJobData`), a closing worker, or another BullMQ version:
   * BullMQ's chain as before.
   */
  private startHanded(handed: Handed): boolean {
    if (!this.directStart || this.isClosing || this.direct) return false;
    const reply = handed.answer;
    const next = nextJobData(reply);
    const data = next[0];
    if (!data || next[1] === undefined) return false;
    const job = this.createJob(data, next[1]);
    if (job.repeatJobKey || job.opts.repeat) return false;
    const token = handed.token;
    fetchedAnswer(
      reply,
      (jobId, begun) => this.started.set(jobId, begun),
      (drained) => {
        this.drainedBehind = drained;
      },
    );
    this.loop.updateDelays(next[2], next[3]);
    this.loop.drained = false;
    this.directTurned = true;
    job.token = token;
    this.handOffs++;
    this.emit('active', job, 'waiting');
    const direct: DirectStart<DataType> = {
      job,
      token,
      running: undefined,
      fetched: false,
      fetchNext: undefined,
    };
    this.direct = direct;
    const running = this.processJob(job, token, () => direct.fetchNext?.() ?? false);
    // Handled here until the loop takes it (its queue handles a failure as before): a failure in
    // this turn must not be an unhandled rejection before the loop comes.
    running.catch(() => undefined);
    direct.running = running;
    return true;
  }

  /** A job the blocking pop brought, taken once, under its token and the slot reserved for it. */
  protected async takeHandedOnce(handed: Handed): Promise<Job<DataType>> {
    let got = false;
    try {
      const job = await this.takeHanded(handed);
      got = job !== undefined;
      return job;
    } finally {
      this.gate?.fetched(handed.token, got);
    }
  }
}
