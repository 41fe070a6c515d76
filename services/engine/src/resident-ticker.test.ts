/**
 * The runs' resident-memory guard (resident-guard.ts) on one ticker an engine, not a timer a run:
 * runs at once and back to back arm one timer between them, a run shorter than half of
 * RESIDENT_GUARD_MS is never read, a longer one is read from half of it on and then every
 * RESIDENT_GUARD_MS, and a run past its bound still ends out of memory, with the same failure.
 * Against a stand-in host under fake timers: counted, never timed.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineWheel } from './deadline-wheel.ts';
import type { HostProcess } from './host-process.ts';
import { hostResidentLimitBytes } from './limits.ts';
import { ResidentTicker } from './resident-guard.ts';
import { Run } from './run.ts';
import { RESIDENT_GUARD_MS, type RunParams } from './run-params.ts';
import type { FromHost, ToHost } from './wire.ts';

interface Events {
  onMessage(m: FromHost): void;
}

function standIn() {
  let events: Events | undefined;
  const host = {
    exited: false,
    killed: 0,
    attach(e: Events | undefined) {
      events = e;
    },
    send(_m: ToHost) {
      return true;
    },
    kill() {
      host.killed++;
    },
    residentBytes(read?: (pid: number) => number | undefined) {
      return read?.(1);
    },
    whenClosed: () => Promise.resolve(),
  };
  const done = () => events?.onMessage({ t: 'done', status: 'completed', valueJson: '1' });
  return { host, run: host as unknown as HostProcess, done };
}

function params(ticker: ResidentTicker, readResident: (pid: number) => number | undefined): RunParams {
  return {
    code: 'return 1',
    config: { bindings: [], clockMs: 0, seed: 's' },
    onCall: undefined,
    // No deadline: the only timer a run could arm is its guard's.
    timeoutMs: null,
    spentMs: 0,
    excludeBindingWaits: false,
    memoryMb: 64,
    outputBytes: 65_536,
    outputCap: 'shared',
    maxConcurrentCalls: 4,
    watchdogGraceMs: 1000,
    signal: undefined,
    cancel: undefined,
    readResident,
    residentTicker: ticker,
    deadlines: new DeadlineWheel(),
  };
}

/** setTimeout and setInterval calls while `fn` runs. */
async function timersArmed(fn: () => Promise<void>): Promise<number> {
  const timeouts = vi.spyOn(globalThis, 'setTimeout');
  const intervals = vi.spyOn(globalThis, 'setInterval');
  try {
    await fn();
    return timeouts.mock.calls.length + intervals.mock.calls.length;
  } finally {
    timeouts.mockRestore();
    intervals.mockRestore();
  }
}

describe("the runs' resident guard", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ten runs at once arm one timer between them, and none is left once they ended', async () => {
    const ticker = new ResidentTicker();
    let reads = 0;
    const hosts = Array.from({ length: 10 }, () => standIn());
    const results: Promise<unknown>[] = [];
    const armed = await timersArmed(async () => {
      for (const h of hosts)
        results.push(
          new Run(
            h.run,
            params(ticker, () => {
              reads++;
              return 1;
            }),
          ).execute(),
        );
    });
    // The base armed one a run (10).
    expect(armed).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    expect(ticker.size).toBe(10);
    for (const h of hosts) h.done();
    await Promise.all(results);
    expect(ticker.size).toBe(0);
    // Ended within half of RESIDENT_GUARD_MS: never read. The timer ticks on a while (the next
    // runs would take it) and stops after a second of ticks that found none.
    vi.advanceTimersByTime(RESIDENT_GUARD_MS / 2);
    expect(reads).toBe(0);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('back-to-back runs shorter than half of RESIDENT_GUARD_MS arm it once and are never read', async () => {
    const ticker = new ResidentTicker();
    let reads = 0;
    const armed = await timersArmed(async () => {
      for (let i = 0; i < 20; i++) {
        const h = standIn();
        const result = new Run(
          h.run,
          params(ticker, () => {
            reads++;
            return 1;
          }),
        ).execute();
        vi.advanceTimersByTime(2);
        h.done();
        await result;
      }
    });
    // The base armed (and cleared) one a run: 20.
    expect(armed).toBe(1);
    expect(ticker.armed).toBe(1);
    expect(reads).toBe(0);
  });

  it("runs with gaps between them (a one-client runner's) arm it once while each gap is under a second", async () => {
    const ticker = new ResidentTicker();
    const armed = await timersArmed(async () => {
      for (let i = 0; i < 20; i++) {
        const h = standIn();
        const result = new Run(
          h.run,
          params(ticker, () => 1),
        ).execute();
        vi.advanceTimersByTime(2);
        h.done();
        await result;
        // The run's end to the next one's start: a client's round trip, longer than a tick.
        vi.advanceTimersByTime(3 * RESIDENT_GUARD_MS);
      }
    });
    // Stopped at the first empty tick, it was armed again for every run (20).
    expect(armed).toBe(1);
    expect(ticker.armed).toBe(1);
  });

  it('reads a run first between half of RESIDENT_GUARD_MS and all of it, then every RESIDENT_GUARD_MS', async () => {
    const ticker = new ResidentTicker();
    // Another run keeps the ticker going, started 30 ms before the one followed.
    const other = standIn();
    const first = new Run(
      other.run,
      params(ticker, () => 1),
    ).execute();
    vi.advanceTimersByTime(30);
    const at: number[] = [];
    const start = Date.now();
    const h = standIn();
    const result = new Run(
      h.run,
      params(ticker, () => {
        at.push(Date.now() - start);
        return 1;
      }),
    ).execute();
    vi.advanceTimersByTime(RESIDENT_GUARD_MS / 2 - 1);
    expect(at).toEqual([]);
    vi.advanceTimersByTime(RESIDENT_GUARD_MS / 2 + 1);
    expect(at).toHaveLength(1);
    expect(at[0]).toBeGreaterThanOrEqual(RESIDENT_GUARD_MS / 2);
    expect(at[0]).toBeLessThanOrEqual(RESIDENT_GUARD_MS);
    vi.advanceTimersByTime(10 * RESIDENT_GUARD_MS);
    expect(at).toHaveLength(11);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBe(RESIDENT_GUARD_MS);
    h.done();
    other.done();
    await Promise.all([result, first]);
  });

  it('ends a run past its bound out of memory, as before: the same failure, its host killed', async () => {
    const ticker = new ResidentTicker();
    let resident = hostResidentLimitBytes(64);
    const h = standIn();
    const result = new Run(
      h.run,
      params(ticker, () => resident),
    ).execute();
    // At its bound: read, still running.
    vi.advanceTimersByTime(RESIDENT_GUARD_MS);
    expect(h.host.killed).toBe(0);
    resident += 1;
    vi.advanceTimersByTime(RESIDENT_GUARD_MS);
    const { outcome, hostReusable } = await result;
    expect(outcome.status).toBe('failed');
    expect(outcome.failure).toEqual({
      kind: 'worker-exit',
      cause: 'memory',
      message: 'the program exceeded its heap limit of 64 MiB',
    });
    expect(hostReusable).toBe(false);
    expect(h.host.killed).toBe(1);
    expect(ticker.size).toBe(0);
    vi.advanceTimersByTime(1000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("watches the Run itself, read through its host with the engine's own reader: no guard object and no closure a run", async () => {
    const ticker = new ResidentTicker();
    const watch = vi.spyOn(ticker, 'watch');
    const pids: number[] = [];
    // The engine's reader (EngineOptions.residentBytesOf), one function for every run.
    const read = (pid: number) => {
      pids.push(pid);
      return 1;
    };
    const runs = [standIn(), standIn()].map((h) => ({ h, run: new Run(h.run, params(ticker, read)) }));
    const results = runs.map((r) => r.run.execute());
    // 33923ae1: a ResidentGuard a run, with a closure over the host.
    expect(watch.mock.calls.map(([watched]) => watched)).toEqual(runs.map((r) => r.run));
    expect(watch.mock.calls[0]?.[0]).toBe(runs[0]?.run);
    vi.advanceTimersByTime(RESIDENT_GUARD_MS);
    // Each run's host read once, with the engine's reader.
    expect(pids).toEqual([1, 1]);
    for (const r of runs) r.h.done();
    await Promise.all(results);
    expect(ticker.size).toBe(0);
  });

  it('an unreadable size is unknown: the run goes on and is read again', async () => {
    const ticker = new ResidentTicker();
    let reads = 0;
    const h = standIn();
    const result = new Run(
      h.run,
      params(ticker, () => {
        reads++;
        throw new Error('no /proc');
      }),
    ).execute();
    vi.advanceTimersByTime(3 * RESIDENT_GUARD_MS);
    expect(reads).toBe(3);
    expect(h.host.killed).toBe(0);
    h.done();
    expect((await result).outcome.status).toBe('completed');
  });
});
