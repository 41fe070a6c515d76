/**
 * A mode's execution slots on one runner, and the runs parked outside them.
 *
 * Slots bound CPU-bound work: a run holds one while its program can run. A run whose binding call
 * waits (a decision held in place, a slow App, a `client` call) parks: it gives its slot back and
 * waits in the parked set (at most `parkedMax`), and takes a slot again before its answer reaches
 * the program. Of the parked runs, `isolatesMax` keep their isolate; past that the run parked
 * longest is released (its `release` callback ends its isolate; it replays from its journal once
 * answered).
 *
 * The BullMQ worker's concurrency is slots + parkedMax, so it can hold parked jobs; `whenFetchable`
 * keeps it from taking a new job unless a slot is free for it (reserved by the fetch's token until
 * the job takes it; nothing else takes a reserved slot, since the fetch may hold the run's lease
 * already), so a runner never hoards jobs it cannot start while other runners could. Runs coming
 * back from parking go before new jobs waiting for a slot: they have started, and their budget is
 * counting.
 *
 * A job fetched with no slot for it (one a completion brought without its run's start) waits here,
 * and the only thing that can pass it over is a completion that starts its worker's next job: the
 * ended run's slot is kept for that job (`keepFor`, with starts in the fetch only). So while anyone
 * waits (`anyWaiting`) such a completion fetches nothing (ParkingWorker.processJob's fetch-next),
 * and the slot its run frees goes to the one waiting longest; otherwise every slot could pass from
 * chain to chain until the queue drained (test/bench/README.md, round 33 `slot-bound`). `waits()` counts those waits and
 * the overtakings.
 */

import { OneSlotMap } from './one-slot-map.ts';

/**
 * A reservation whose job never took its slot (BullMQ failed it before the processor ran) lapses
 * after this, ms; a fetched job reaches the processor within milliseconds.
 */
const RESERVATION_LAPSE_MS = 10_000;

export interface ParkedRun {
  /** Ends the run's isolate; it replays once answered (called at most once). */
  release: () => void;
}

interface Entry {
  run: ParkedRun;
  isolate: boolean;
  /** Answered and waiting for a slot: about to use its isolate, never the one released. */
  resuming: boolean;
}

interface SlotGateState {
  busy: number;
  parkedWithIsolate: number;
  parkedReleased: number;
}

interface SlotGateOptions {
  slots: number;
  parkedMax: number;
  isolatesMax: number;
  /** A run parked (with its isolate). */
  onPark?: () => void;
  /** A parked run's isolate was released to stay within the budget. */
  onRelease?: () => void;
}

type Waiter = { resume: boolean; grant: () => void; since: number };

/** Fetched jobs' waits for a slot, as `SlotGate.waits()` reports them. */
export interface FetchedWaits {
  /** Fetched jobs waiting for a slot now (their run not started). */
  waiting: number;
  /** How long the one waiting longest has waited so far, ms (0: none waits). */
  oldestMs: number;
  /** Fetched jobs that had to wait for a slot, since the gate was made. */
  waited: number;
  /** The longest such wait that ended, ms. */
  longestMs: number;
  /** Slots kept for a job a completion started while a fetched job already waited (it was overtaken). */
  passedOver: number;
}

export class SlotGate {
  private busy = 0;
  /**
   * Fetches let through (by token, with when) whose job has not taken its slot yet: one entry to
   * none every run at one client, held in front of a Map (one-slot-map.ts).
   */
  private readonly reserved = new OneSlotMap<string, number>();
  private readonly waiters: Waiter[] = [];
  private fetchWaiters: (() => void)[] = [];
  /** In park order: the oldest first. */
  private readonly parked = new Map<ParkedRun, Entry>();
  private withIsolate = 0;
  private readonly o: SlotGateOptions;
  private fetchedWaited = 0;
  private longestFetchedWaitMs = 0;
  private passedOver = 0;

  constructor(options: SlotGateOptions) {
    this.o = options;
  }

  /** Jobs the worker may hold at once: the slots and the parked runs. */
  get concurrency(): number {
    return this.o.slots + this.o.parkedMax;
  }

  /** Its counts now: the slot gauges read them when scraped (runner-context.ts). */
  state(): SlotGateState {
    return {
      busy: this.busy,
      parkedWithIsolate: this.withIsolate,
      parkedReleased: this.parked.size - this.withIsolate,
    };
  }

  /** Fetched jobs' waits for a slot (read when the metrics are scraped, and by tests). */
  waits(): FetchedWaits {
    let waiting = 0;
    let oldest: number | undefined;
    for (const w of this.waiters)
      if (!w.resume) {
        waiting++;
        if (oldest === undefined || w.since < oldest) oldest = w.since;
      }
    return {
      waiting,
      oldestMs: oldest === undefined ? 0 : Date.now() - oldest,
      waited: this.fetchedWaited,
      longestMs: this.longestFetchedWaitMs,
      passedOver: this.passedOver,
    };
  }

  /**
   * Whether the worker may fetch a job now: `fetch` with a slot reserved for the fetch's token
   * (`fetched(token, false)` returns it when no job came). With no slot free it waits for one, but
   * answers `later` at once while jobs it fetched before have not started: BullMQ fetches several
   * jobs in a row before it starts any, and waiting here would keep those from ever starting.
   */
  async whenFetchable(token: string, closing: () => boolean): Promise<'fetch' | 'later'> {
    for (;;) {
      if (this.lapseReservations()) this.wake();
      if (closing() || this.room() > 0) break;
      if (this.reserved.size > 0) return 'later';
      await new Promise<void>((resolve) => this.fetchWaiters.push(resolve));
    }
    this.reserved.set(token, Date.now());
    return 'fetch';
  }

  /**
   * A slot reserved for a job a submit may hand to the idle worker (its token), only when one is
   * free beside a slot for every parked run (a run coming back must never wait behind a worker
   * that sits idle). `fetched(token, false)` returns it.
   */
  reserveIdle(token: string): boolean {
    if (this.reserved.has(token)) {
      this.reserved.set(token, Date.now());
      return true;
    }
    this.lapseReservations();
    if (this.room() - this.parked.size <= 0) return false;
    this.reserved.set(token, Date.now());
    return true;
  }

  /** Whether no parked run waits to come back (a slot passed on to a new job would keep it waiting). */
  noResumeWaiting(): boolean {
    return !this.waiters.some((w) => w.resume);
  }

  /**
   * Whether anyone waits for a slot: a fetched job or a parked run coming back. A completion then
   * brings no next job: the slot its run frees goes to the one waiting longest, not to a job fetched
   * after it (`keepFor`), nor to one more job waiting behind it.
   */
  anyWaiting(): boolean {
    return this.waiters.length > 0;
  }

  /**
   * Whether a slot is free beside one for every parked run, and nobody waits for one: a job handed
   * to the idle worker, or fetched, would start now even with one more slot taken. A run's end may
   * then give its slot back a little later (end-complete-store.ts `settledLater`).
   */
  spare(): boolean {
    return this.waiters.length === 0 && this.room() - this.parked.size > 0;
  }

  /**
   * A job BullMQ's completion brought with its run's lease taken already (its token): the slot
   * of the run that completed, released right after, is reserved for it, so no fetch takes it in
   * between (a lease must not wait for a slot). Waiting fetches are woken to answer `later`, so
   * the worker starts the job rather than wait for a slot itself.
   */
  keepFor(token: string): void {
    // Decided before a job waited (the completion was on its way): counted, and bounded, since the
    // completions sent from now on fetch nothing while it waits (`anyWaiting`).
    if (this.waiters.some((w) => !w.resume)) this.passedOver++;
    this.reserved.set(token, Date.now());
    this.wakeFetches();
  }

  /** After a fetch `whenFetchable` let through: `got` false returns its reservation. */
  fetched(token: string, got: boolean): void {
    if (!got && this.reserved.delete(token)) this.wake();
  }

  /**
   * Takes a slot for a job the worker fetched: its reservation, when it has one, at once (no
   * waiter takes a reserved slot: the fetch may have taken the run's fair-share lease already, and
   * a lease must not wait for a slot); a job BullMQ fetched on its own, with the previous job's
   * completion, waits like any other.
   */
  async take(token?: string): Promise<void> {
    if (token !== undefined && this.reserved.delete(token)) {
      this.busy++;
      return;
    }
    await this.acquire(false);
  }

  private room(): number {
    return this.o.slots - this.busy - this.reserved.size - this.waiters.length;
  }

  /** Slots neither taken nor reserved. */
  private unreserved(): number {
    return this.o.slots - this.busy - this.reserved.size;
  }

  private lapseReservations(): boolean {
    const old = Date.now() - RESERVATION_LAPSE_MS;
    let lapsed = false;
    // `forEach`, not `for … of` its entries: an entry array and an iterator result each otherwise,
    // every fetch (deleting the entry being visited is safe in either).
    this.reserved.forEach((at, token) => {
      if (at < old) {
        this.reserved.delete(token);
        lapsed = true;
      }
    });
    return lapsed;
  }

  /** Gives a slot back (the job ended, or it was deferred before it ran). */
  release(): void {
    this.busy = Math.max(0, this.busy - 1);
    this.wake();
  }

  /**
   * The run waits for an answer: its slot goes back and it joins the parked set. False (nothing
   * changed: the run keeps its slot) when the set is full or parking is off.
   */
  park(run: ParkedRun): boolean {
    if (this.parked.size >= this.o.parkedMax || this.parked.has(run)) return false;
    this.parked.set(run, { run, isolate: true, resuming: false });
    this.withIsolate++;
    this.busy = Math.max(0, this.busy - 1);
    this.o.onPark?.();
    // Over the memory budget: the run parked longest lets its isolate go (the newest may be a
    // slow App about to answer; the oldest is most likely a person).
    if (this.withIsolate > this.o.isolatesMax) {
      for (const entry of this.parked.values()) {
        if (!entry.isolate || entry.resuming) continue;
        entry.isolate = false;
        this.withIsolate--;
        this.o.onRelease?.();
        entry.run.release();
        break;
      }
    }
    this.wake();
    return true;
  }

  /** The parked run's isolate ended by itself (its run ended while parked): it no longer counts as kept. */
  isolateGone(run: ParkedRun): void {
    const entry = this.parked.get(run);
    if (!entry?.isolate) return;
    entry.isolate = false;
    this.withIsolate--;
  }

  /** The answer came: the run takes a slot again (before new jobs) and leaves the parked set. */
  async resume(run: ParkedRun): Promise<void> {
    const entry = this.parked.get(run);
    if (entry) entry.resuming = true;
    await this.acquire(true);
    this.leave(run);
  }

  /** The run ended while parked (deadline, cancel, hand-back): it leaves the set holding no slot. */
  leave(run: ParkedRun): void {
    const entry = this.parked.get(run);
    if (!entry) return;
    this.parked.delete(run);
    if (entry.isolate) this.withIsolate--;
  }

  /** Wakes every waiting fetch, so one of a closing worker finds it closing and takes nothing. */
  wakeFetches(): void {
    const woken = this.fetchWaiters;
    this.fetchWaiters = [];
    for (const w of woken) w();
  }

  private async acquire(resume: boolean): Promise<void> {
    this.lapseReservations();
    if (this.unreserved() > 0 && (resume || !this.waiters.some((w) => w.resume))) {
      this.busy++;
      return;
    }
    const since = Date.now();
    if (!resume) this.fetchedWaited++;
    await new Promise<void>((grant) => {
      const waiter = { resume, grant, since };
      // Coming back from parking goes ahead of new jobs, behind earlier returns.
      const at = resume ? this.waiters.findIndex((w) => !w.resume) : -1;
      if (at < 0) this.waiters.push(waiter);
      else this.waiters.splice(at, 0, waiter);
    });
  }

  private wake(): void {
    this.lapseReservations();
    while (this.unreserved() > 0 && this.waiters.length > 0) {
      this.busy++;
      const waiter = this.waiters.shift();
      if (waiter && !waiter.resume)
        this.longestFetchedWaitMs = Math.max(this.longestFetchedWaitMs, Date.now() - waiter.since);
      waiter?.grant();
    }
    if (this.room() > 0) this.wakeFetches();
  }
}
