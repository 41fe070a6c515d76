/**
 * A run's resident-memory guard (run.ts, the Run itself): reads the host's resident size from outside the host
 * about every RESIDENT_GUARD_MS, so it holds while the host's thread runs the program, and reports
 * the run out of memory once it passes its bound (limits.ts `hostResidentLimitBytes`).
 *
 * The guards of an engine's runs share one ticker (`ResidentTicker`, one an engine, passed in
 * RunParams), not a timer a run: a run's own timer was armed and cleared on every run, most of
 * which end long before their first check (test/bench/README.md, round 47 `runner-cpu`, round 48
 * `engine-timers`). Not one ticker a module: a ticker made under a test's fake timers would stay
 * fake for the file's later tests.
 */
import { heapLimitMessage, hostResidentLimitBytes } from './limits.ts';
import { RESIDENT_GUARD_MS } from './run-params.ts';
import type { RunFailure } from './types.ts';

/** The ticker's period: half the guard's, so a run is first read between half of it and all of it. */
const TICK_MS = RESIDENT_GUARD_MS / 2;
/** Ticks between two reads of one run (RESIDENT_GUARD_MS). */
const TICKS_A_READ = 2;
/**
 * Empty ticks since the last run started before the timer stops (1 s): a one-client runner's runs
 * are in the engine a fraction of their time, and a timer stopped at the first empty tick was
 * armed again every few runs (0.28 `setInterval` a run, round 48 `engine-timers`).
 */
const IDLE_TICKS = 20;

/**
 * What the ticker reads: a run in flight (run.ts `Run` itself, no guard object and no reading
 * closure a run: round 49 `engine-timers-2`).
 */
export interface ResidentWatched {
  /** The ticker's count at which this run is read next (ResidentTicker). */
  dueTick: number;
  /** Reads the run's host: true once the run was reported over its bound (no longer watched). */
  checkResident(): boolean;
}

/**
 * A run's host read at `resident` bytes (undefined: unknown, as an unreadable /proc is): the
 * out-of-memory failure once past its bound (limits.ts `hostResidentLimitBytes`), else undefined.
 */
export function residentFailure(memoryMb: number, resident: number | undefined): RunFailure | undefined {
  if (resident === undefined || resident <= hostResidentLimitBytes(memoryMb)) return undefined;
  return { kind: 'worker-exit', cause: 'memory', message: heapLimitMessage(memoryMb) };
}

/**
 * One engine's ticker over its runs in flight: every RESIDENT_GUARD_MS/2 it reads each run whose
 * read is due. A run is first read at its second tick (between RESIDENT_GUARD_MS/2 and
 * RESIDENT_GUARD_MS after its start, as a late timer would be late), then at every second tick; a
 * run shorter than half of it is never read. The timer runs while runs are watched and stops once
 * IDLE_TICKS empty ticks passed since a run last started, so back-to-back and one-client runs arm
 * none of their own.
 */
export class ResidentTicker {
  private readonly guards = new Set<ResidentWatched>();
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;
  private idleTicks = 0;
  /** How often its timer was armed (the counts' and the tests' figure: not once a run). */
  armed = 0;

  watch(guard: ResidentWatched): void {
    guard.dueTick = this.ticks + TICKS_A_READ;
    this.guards.add(guard);
    this.idleTicks = 0;
    if (this.timer !== undefined) return;
    this.armed++;
    this.timer = setInterval(() => this.tick(), TICK_MS);
    // The runs it watches hold the process (their hosts' pipes), not the ticker.
    this.timer.unref?.();
  }

  unwatch(guard: ResidentWatched): void {
    this.guards.delete(guard);
  }

  /** Runs watched now. */
  get size(): number {
    return this.guards.size;
  }

  /** Stops the timer (the engine's close); runs still watched are no longer read. */
  close(): void {
    this.guards.clear();
    this.stopTimer();
  }

  private tick(): void {
    const now = ++this.ticks;
    if (this.guards.size === 0) {
      if (++this.idleTicks >= IDLE_TICKS) this.stopTimer();
      return;
    }
    // A run reported over its bound ends (its guard unwatched) within the loop: a Set's iteration
    // skips what was deleted and reads what was added once (not due: its first read is two ticks on).
    for (const guard of this.guards) {
      if (guard.dueTick > now) continue;
      guard.dueTick = now + TICKS_A_READ;
      if (guard.checkResident()) this.guards.delete(guard);
    }
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.idleTicks = 0;
  }
}
