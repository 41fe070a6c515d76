/**
 * The pick-up watchdog's decisions, with fakes for the worker state, the queue count and the
 * restart: it restarts only a mode that held no job while jobs waited at two checks in a row with
 * no pick-up in between, never on a failed count, and never runs two checks at once.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPickupWatchdog, type PickupWatchdog } from './pickup-watchdog.ts';

type Mode = 'a' | 'b';

function harness() {
  const state: Record<Mode, { held: number; lastPickupAtMs: number | undefined; waiting: number | Error }> = {
    a: { held: 0, lastPickupAtMs: undefined, waiting: 0 },
    b: { held: 0, lastPickupAtMs: undefined, waiting: 0 },
  };
  const restarted: Mode[] = [];
  const counted: Mode[] = [];
  const warnings: Array<Record<string, unknown>> = [];
  let countCalls = 0;
  let countGate: Promise<void> | undefined;
  const watchdog = createPickupWatchdog<Mode>({
    modes: ['a', 'b'],
    intervalMs: 1000,
    probe: (mode) => ({ held: state[mode].held, lastPickupAtMs: state[mode].lastPickupAtMs }),
    countWaiting: async (mode) => {
      countCalls++;
      if (countGate) await countGate;
      const w = state[mode].waiting;
      if (w instanceof Error) throw w;
      return w;
    },
    restart: async (mode) => {
      restarted.push(mode);
    },
    restarts: { inc: ({ mode }) => counted.push(mode) },
    logger: {
      warn: (obj: Record<string, unknown>) => warnings.push(obj),
      error: () => undefined,
    } as never,
    now: () => 10_000,
  });
  return {
    state,
    restarted,
    counted,
    warnings,
    watchdog,
    countCalls: () => countCalls,
    gate(p: Promise<void> | undefined) {
      countGate = p;
    },
  };
}

let open: PickupWatchdog | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await open?.close();
  open = undefined;
});

describe('pick-up watchdog', () => {
  it('restarts a mode idle with jobs waiting at two checks in a row, counts and logs it, then starts over', async () => {
    const h = harness();
    open = h.watchdog;
    h.state.a = { held: 0, lastPickupAtMs: 4000, waiting: 3 };
    await h.watchdog.check();
    expect(h.restarted).toEqual([]); // one observation is not a whole interval
    await h.watchdog.check();
    expect(h.restarted).toEqual(['a']);
    expect(h.counted).toEqual(['a']);
    expect(h.warnings).toContainEqual({ mode: 'a', waiting: 3, msSinceLastPickup: 6000 });
    // A fresh worker gets its own whole interval before it can be restarted again.
    await h.watchdog.check();
    expect(h.restarted).toEqual(['a']);
    await h.watchdog.check();
    expect(h.restarted).toEqual(['a', 'a']);
  });

  it('never restarts a worker that holds a job, even with jobs waiting', async () => {
    const h = harness();
    open = h.watchdog;
    h.state.a = { held: 1, lastPickupAtMs: 1, waiting: 5 };
    for (let i = 0; i < 4; i++) await h.watchdog.check();
    expect(h.restarted).toEqual([]);
    // Idle, stuck, holding at the next check, idle again: the streak starts over.
    h.state.a.held = 0;
    await h.watchdog.check();
    h.state.a.held = 1;
    await h.watchdog.check();
    h.state.a.held = 0;
    await h.watchdog.check();
    expect(h.restarted).toEqual([]);
    await h.watchdog.check();
    expect(h.restarted).toEqual(['a']);
  });

  it('does not restart an idle worker when nothing waits', async () => {
    const h = harness();
    open = h.watchdog;
    for (let i = 0; i < 4; i++) await h.watchdog.check();
    h.state.a.waiting = 2;
    await h.watchdog.check();
    h.state.a.waiting = 0;
    await h.watchdog.check();
    h.state.a.waiting = 2;
    await h.watchdog.check();
    expect(h.restarted).toEqual([]);
  });

  it('does not restart when a pick-up happened between the two checks', async () => {
    const h = harness();
    open = h.watchdog;
    h.state.b = { held: 0, lastPickupAtMs: undefined, waiting: 4 };
    await h.watchdog.check();
    h.state.b.lastPickupAtMs = 9000; // took a job and finished it between checks
    await h.watchdog.check();
    expect(h.restarted).toEqual([]);
    await h.watchdog.check();
    expect(h.restarted).toEqual(['b']);
    expect(h.warnings).toContainEqual({ mode: 'b', waiting: 4, msSinceLastPickup: 1000 });
  });

  it('a failed count query restarts nothing and breaks the streak', async () => {
    const h = harness();
    open = h.watchdog;
    h.state.a = { held: 0, lastPickupAtMs: 1, waiting: new Error('CLUSTERDOWN') };
    for (let i = 0; i < 3; i++) await h.watchdog.check();
    expect(h.restarted).toEqual([]);
    expect(h.warnings).toContainEqual({ mode: 'a', err: 'CLUSTERDOWN' });
    h.state.a.waiting = 1;
    await h.watchdog.check();
    h.state.a.waiting = new Error('timeout');
    await h.watchdog.check();
    h.state.a.waiting = 1;
    await h.watchdog.check();
    expect(h.restarted).toEqual([]);
    await h.watchdog.check();
    expect(h.restarted).toEqual(['a']);
  });

  it('never runs two checks at once: ticks due while one runs are skipped; close waits for it', async () => {
    vi.useFakeTimers();
    const h = harness();
    open = h.watchdog;
    let release: () => void = () => undefined;
    h.gate(new Promise<void>((r) => (release = r)));
    h.watchdog.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(h.countCalls()).toBe(1); // mode a's count, hanging
    // Direct calls and further ticks join the running check instead of starting another.
    const joined = h.watchdog.check();
    await vi.advanceTimersByTimeAsync(500);
    expect(h.countCalls()).toBe(1);
    // A count that does not answer within the interval fails that mode; the check goes on to b.
    await vi.advanceTimersByTimeAsync(500);
    expect(h.warnings).toContainEqual({ mode: 'a', err: 'no answer within 1000 ms' });
    expect(h.countCalls()).toBe(2);
    release();
    h.gate(undefined);
    await joined;
    await vi.advanceTimersByTimeAsync(1000);
    expect(h.countCalls()).toBe(4); // the next tick runs again: a, b
    // close() stops the timer and waits for the check in flight.
    let release2: () => void = () => undefined;
    h.gate(new Promise<void>((r) => (release2 = r)));
    await vi.advanceTimersByTimeAsync(1000);
    let closed = false;
    const closing = h.watchdog.close().then(() => {
      closed = true;
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(closed).toBe(false);
    release2();
    await closing;
    const calls = h.countCalls();
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.countCalls()).toBe(calls);
  });

  it('refuses an interval that is not positive', () => {
    expect(() =>
      createPickupWatchdog({
        modes: [],
        intervalMs: 0,
        probe: () => ({ held: 0, lastPickupAtMs: undefined }),
        countWaiting: async () => 0,
        restart: async () => undefined,
        restarts: { inc: () => undefined },
        logger: { warn: () => undefined, error: () => undefined } as never,
      }),
    ).toThrow(/> 0/);
  });
});
