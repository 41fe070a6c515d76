/**
 * The shapes ParkingWorker (parking-worker.ts) reads of BullMQ's privates, and its fetch start's
 * hooks; apart so the worker stays under ~400 lines.
 */
import type { FetchedStart } from '@islet/runs';
import type { RedisClient } from 'bullmq';
import type { CompletionArgsWriter } from './completion-args.ts';
import type { MovedJob } from './fetch-start-store.ts';

/** BullMQ's fetch-loop state, private there; read and set here to skip fetches it would make for nothing. */
export interface FetchLoopState {
  drained: boolean;
  /** Set while the worker blocks on the queue's marker and fetches on its wake-up. */
  waiting: Promise<number> | null;
  updateDelays(limitDelay?: number, delayUntil?: number): void;
}

/** How this worker's fetches start their runs (mode-worker.ts); absent: BullMQ's fetch alone. */
export interface FetchStart {
  /** Whether a fetch may start its run (one server, fair share on); asked at each fetch. */
  on(): Promise<boolean>;
  /** The start's terms after BullMQ's arguments (made at each fetch: its time; `startArgsList` the arguments). */
  start(): FetchedStart;
  /** Gives back the lease of a job whose start no processor took (BullMQ never ran it). */
  giveBack?: (tenant: string, jobId: string) => Promise<void>;
  /**
   * A fetch (or a completion's fetch of the next job) moves a run's job whose lease is refused to
   * delayed itself, with this delay (ISLET_TENANT_SHARE_RECHECK_MS), and fetches the next one in
   * its place; absent, the refusal reaches the processor, which moves the job (fetch-start-store.ts).
   */
  deferMs?: number;
  /** Jobs a fetch moved so (their deferral counted, a swapped reservation promoted). */
  moved?: (jobs: MovedJob[]) => void;
}

/** BullMQ's Scripts, private there: its calls go through `execCommand`. */
export interface ExecScripts {
  execCommand(client: RedisClient, name: string, args: unknown[]): Promise<unknown>;
  /** BullMQ's completion's keys and arguments, as its `Job.moveToCompleted` builds them. */
  moveToCompletedArgs?(
    job: unknown,
    returnvalue: string,
    removeOnComplete: unknown,
    token: string,
    fetchNext: boolean,
  ): unknown[];
  version: string;
  fused?: boolean;
  /** Its completions' arguments' writer, once fused (completion-args.ts; undefined: BullMQ's own). */
  completionArgs?: CompletionArgsWriter | undefined;
}
