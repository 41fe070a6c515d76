/**
 * The idle side of a ParkingWorker's direct hand-off (its Redis calls are handoff-store.ts'):
 * BullMQ's wait on the queue's marker becomes the worker's registration and a blocking pop on its
 * own hand-off key and that marker, with a slot reserved for a job a submit hands to it; the job
 * the pop brings waits here for the fetch that follows. At close the registration goes and the pop
 * is woken, so a job handed before that is popped or left on its key, and given back either way:
 * a closing worker runs no job it had not started.
 */
import { type FetchedStart, type FixedTerms, startArgsList } from '@islet/runs';
import { Job, type RedisClient, type Worker } from 'bullmq';
import type { CompletionArgsWriter } from './completion-args.ts';
import type { FetchTakeBack } from './fetch-start-store.ts';
import {
  closeIdle,
  type Handed,
  type HandOffKeys,
  type IdlePop,
  IdleTermsWriter,
  nextJobData,
  registerAndPop,
  takeBack,
  takeLeft,
} from './handoff-store.ts';
import { ownWaitForJob, type PopAnswer, type WaitingWorker, waitForPop } from './pop-wait.ts';
import { PopWatchdog } from './pop-watchdog.ts';
import type { SlotGate } from './slot-gate.ts';

/** Direct hand-off (handoff-store.ts): how a worker registers itself idle. */
export interface HandOff {
  /** The worker's hand-off keys: idle, idle args, its own. */
  keys: HandOffKeys;
  /** BullMQ's moveToActive-11 keys of the queue. */
  fetchKeys: string[];
  /** How long a registration lives past its blocking pop's timeout, ms (bounds a dead worker's). */
  graceMs: number;
  /** Gives back the lease a job handed over took (the worker closed before it popped the job). */
  giveBack?: (tenant: string, jobId: string) => Promise<void>;
  /** Its mode's fixed names: registrations in the compact form (ISLET_HANDOFF_COMPACT_TERMS=on). */
  compact?: FixedTerms;
  /** No registration while the queue's marker stands (ISLET_HANDOFF_REFUSE_ON_MARKER=on). */
  refuseOnMarker?: boolean;
  /**
   * After a pop that brought no hand-off, the take-back goes with the worker's fetch (claimed by
   * `claimTakeBack`), not as a round trip before it (round 49 `fetch-takeback`).
   */
  fuseTakeBack?: boolean;
}

/** BullMQ's private wait on the queue's marker (worker.js `waitForJob`). */
export type WaitForJob = (bclient: RedisClient, blockUntil: number) => Promise<number>;

/** What the wait reads of its worker at each wait (set on it after it was made). */
export interface HandOffHooks {
  gate(): SlotGate | undefined;
  /** The worker's fetch start: whether a fetch may start its run now, and its arguments. */
  start(): { on(): Promise<boolean>; start(): FetchedStart } | undefined;
  /** Jobs a fetch brought have not started yet: the worker waits as BullMQ does, unregistered. */
  unstarted(): boolean;
  /** BullMQ's marker wait under way (its private `waiting`). */
  waiting(): Promise<number> | null;
  /** The worker's close began (set before this wait's close and BullMQ's `closing`). */
  closing(): boolean;
  /**
   * Starts the handed job's processor now, from the pop's answer (parking-worker.ts
   * `startHanded`); false: not started, BullMQ's loop fetches it from here as before.
   */
  direct?(handed: Handed): boolean;
}

/** How long a close waits for its woken pop to come back before closing anyway, ms. */
const CLOSE_WAKE_WAIT_MS = 2_000;

export class HandOffWait<DataType> {
  /** Registrations written. */
  registrations = 0;
  /** Registrations removed by `TAKE_BACK` after a pop that brought no hand-off (tests read it). */
  takeBacks = 0;
  /** Jobs popped or left on the key at close, given back to the queue (tests read it). */
  givenBack = 0;
  /** Handed jobs whose processor started from the pop's answer (tests read it). */
  directStarts = 0;
  /** Take-backs the worker's fetch carried (`claimTakeBack`; tests and the probe read it). */
  fusedTakeBacks = 0;
  /**
   * A pop that brought no hand-off left its registration standing (`fuseTakeBack`): its take-back
   * is owed, to go with the next fetch, or alone (`settle`) where none goes to Redis first.
   */
  owed = false;
  /** The close removed the registration: none is written again. */
  closed = false;
  /** The worker's one timer guarding its pops (BullMQ's `waitForJob` armed one a pop). */
  readonly watchdog = new PopWatchdog();
  /** Its registrations' terms as text (the same text at every one but the token and time). */
  readonly terms: IdleTermsWriter;
  /** The registration of the pop under way: its lock token (its slot reserved for it). */
  private idle: { token: string } | undefined;
  private tokens = 0;
  /** A job the blocking pop brought, for the fetch that follows it. */
  private handed: Handed | undefined;
  private readonly handOff: HandOff;
  private readonly worker: Worker<DataType>;
  private readonly hooks: HandOffHooks;

  constructor(handOff: HandOff, worker: Worker<DataType>, hooks: HandOffHooks) {
    this.handOff = handOff;
    this.worker = worker;
    this.hooks = hooks;
    this.terms = new IdleTermsWriter(handOff.compact);
  }

  /** BullMQ's marker wait (`wait`) as the registration and the pop on both keys, when it may be. */
  async wait(wait: WaitForJob, bclient: RedisClient, blockUntil: number): Promise<number> {
    const start = this.hooks.start();
    const gate = this.hooks.gate();
    // A take-back no fetch carried: sent now, before anything registers again.
    if (this.owed) await this.settle();
    // A job handed over and not taken yet: no wait, the fetch that follows takes it.
    if (this.handed) return 0;
    if (!start || this.hooks.closing() || this.closed || this.hooks.unstarted())
      return wait(bclient, blockUntil);
    const token = `${this.worker.id}:h:${this.tokens++}`;
    if (!(await start.on()) || (gate && !gate.reserveIdle(token))) return wait(bclient, blockUntil);
    // The completion of a job handed under this token: its packed options made now, off the path.
    (
      this.worker as unknown as { scripts?: { completionArgs?: CompletionArgsWriter } }
    ).scripts?.completionArgs?.prepare(token);
    const pop = (marker: string, timeoutS: number) => this.pop(bclient, start, gate, token, marker, timeoutS);
    // The worker's one watchdog timer, not BullMQ's timer a pop (pop-wait.ts).
    if (ownWaitForJob) return waitForPop(this.bull, this.watchdog, bclient, blockUntil, pop);
    const blocking: RedisClient = Object.create(bclient);
    (blocking as unknown as { bzpopmin: unknown }).bzpopmin = pop;
    return wait(blocking, blockUntil);
  }

  /** The registration and the blocking pop on both keys, as BullMQ's `bzpopmin` on the marker answers. */
  private async pop(
    bclient: RedisClient,
    start: { start(): FetchedStart },
    gate: SlotGate | undefined,
    token: string,
    marker: string,
    timeoutS: number,
  ): Promise<PopAnswer> {
    const handOff = this.handOff;
    const opts = this.worker.opts;
    this.idle = { token };
    let popped: IdlePop;
    try {
      popped = await registerAndPop(
        bclient,
        handOff.keys,
        this.worker.id,
        this.terms.write({
          keys: handOff.fetchKeys,
          prefix: this.worker.keys[''] ?? '',
          token,
          lockDuration: opts.lockDuration ?? 30_000,
          name: opts.name ?? '',
          startArgs: startArgsList(start.start()),
          handOff: handOff.keys[2],
        }),
        Math.ceil(timeoutS * 1000) + handOff.graceMs,
        marker,
        timeoutS,
        (yes) => {
          if (yes) this.registrations++;
        },
        () => {
          this.takeBacks++;
        },
        handOff.refuseOnMarker === true,
        handOff.fuseTakeBack === true,
      );
    } catch (err) {
      // A pop that failed (its connection dropped: its watchdog's, or a close's) popped nothing:
      // its slot is returned now, not left reserved until it lapses (10 s, the worker's only one
      // at one slot); a job handed to its registration stays on the key for the next pop.
      gate?.fetched(token, false);
      throw err;
    } finally {
      this.idle = undefined;
    }
    if (popped.owed) this.owed = true;
    if (popped.handed && this.hooks.closing()) {
      // Popped as the close began (its registration not removed yet): never run here.
      this.handed = popped.handed;
      return [marker, '0', String(Number.MAX_SAFE_INTEGER)];
    }
    if (popped.handed) {
      // Started here, in the pop's answer's turn: BullMQ's loop (its wait's race, the fetch, its
      // queue, processJob) reaches the job a turn later, once the run's program went to its
      // host, and the worker answers it with the job and its processJob already under way.
      if (this.hooks.direct?.(popped.handed)) {
        this.directStarts++;
        await new Promise((resolve) => setImmediate(resolve));
        return [marker, '0', '0'];
      }
      // The job keeps the registration's token and the slot reserved for it; BullMQ fetches
      // at once (what it reads as the marker of a job due now) and gets it.
      this.handed = popped.handed;
      return [marker, '0', '0'];
    }
    gate?.fetched(token, false);
    // Woken by its own close: no fetch (a time far off, as BullMQ reads a marker).
    if (popped.closing) return [marker, '0', String(Number.MAX_SAFE_INTEGER)];
    return popped.marker ?? null;
  }

  /** The worker as BullMQ's `waitForJob` reads it. */
  private get bull(): WaitingWorker {
    return this.worker as unknown as WaitingWorker;
  }

  /**
   * A registration's pop is under way: a job a submit adds now is handed to it, not left waiting
   * for a completion's fetch-next (parking-worker-end.ts sends no start terms with one then).
   */
  get registered(): boolean {
    return this.idle !== undefined;
  }

  /**
   * The take-back owed, for the fetch about to go (fetch-start-store.ts `startingClient`), taken
   * once: that fetch's call removes the registration or takes the job handed to it.
   */
  claimTakeBack(): FetchTakeBack | undefined {
    if (!this.owed) return undefined;
    this.owed = false;
    this.fusedTakeBacks++;
    const keys = this.handOff.keys;
    return { keys: [keys[0], keys[1], keys[2]], workerId: this.worker.id };
  }

  /**
   * A take-back owed, sent alone (a path that sends no fused fetch first: no start in the fetch,
   * the queue found drained, no slot): a job handed meanwhile waits here for the fetch that follows
   * (`take`), a slot reserved for it where one is free (its own was returned at the pop).
   */
  async settle(): Promise<void> {
    if (!this.owed) return;
    this.owed = false;
    this.takeBacks++;
    const handed = await takeBack(await this.worker.client, this.handOff.keys, this.worker.id);
    if (!handed) return;
    this.hooks.gate()?.reserveIdle(handed.token);
    this.handed = handed;
  }

  /** The job the pop brought, taken once (undefined: none). */
  take(): Handed | undefined {
    const handed = this.handed;
    this.handed = undefined;
    return handed;
  }

  /**
   * Before BullMQ's close drops the blocking connection (a reply in flight on it would be lost):
   * the registration goes and the pop is woken, so a job handed before that is either popped or
   * left on its key; either way it is given back here (or by the refused fetch that takes it).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.watchdog.close();
    // The close removes the registration and takes what was handed to it (below).
    this.owed = false;
    const handOff = this.handOff;
    try {
      const client = await this.worker.client;
      await closeIdle(client, handOff.keys, this.worker.id);
      const waiting = this.idle ? this.hooks.waiting() : null;
      if (waiting) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          waiting.catch(() => 0),
          new Promise((resolve) => {
            timer = setTimeout(resolve, CLOSE_WAKE_WAIT_MS);
          }),
        ]);
        clearTimeout(timer);
      }
      // Popped as the close began: given back, never run by a worker that is leaving.
      const popped = this.take();
      if (popped) {
        this.hooks.gate()?.fetched(popped.token, false);
        this.givenBack++;
        await this.giveBack(popped);
      }
      const left = await takeLeft(client, handOff.keys);
      if (left) {
        this.givenBack++;
        await this.giveBack(left);
      }
    } catch (err) {
      this.worker.emit('error', err as Error);
    }
  }

  /** A job handed over that this worker will not run: back to the queue, its lease given back. */
  async giveBack(handed: Handed): Promise<void> {
    const [jobData, id] = nextJobData(handed.answer);
    if (!jobData || id === undefined) return;
    const job = Job.fromJSON(this.worker, jobData, id);
    await job.moveToWait(handed.token);
    const data = job.data as { tenant?: unknown; skill?: unknown };
    if (typeof data.tenant === 'string' && !data.skill)
      await this.handOff.giveBack?.(data.tenant, String(id));
  }
}
