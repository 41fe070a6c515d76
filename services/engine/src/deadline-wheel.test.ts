/**
 * The runs' deadlines on one timer an engine (deadline-wheel.ts), not a timer a run: a deadline is
 * a security limit, so these attack it. Runs with mixed budgets, started at different times, each
 * end at its own budget in deadline order with the deadline's failure and text; a run that ends
 * early ends no other; an idle wheel arms no timer; a shorter budget than the armed one re-arms it;
 * a wall clock that jumps moves no deadline. Against stand-in hosts under fake timers (the
 * monotonic clock faked too): counted and ordered on the fake clock, never timed. The host's own
 * first-turn deadline with real hosts: limits.test.ts, limits-ending.test.ts, and the last test.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineWheel } from './deadline-wheel.ts';
import { createEngine } from './engine.ts';
import type { HostProcess } from './host-process.ts';
import { deadlineMessage } from './limits.ts';
import { ResidentTicker } from './resident-guard.ts';
import { Run } from './run.ts';
import type { RunParams, RunResult } from './run-params.ts';
import type { FromHost, ToHost } from './wire.ts';

interface Events {
  onMessage(m: FromHost): void;
}

/** A host that never yields: it answers an `end` (the deadline's) with its own failure, noted. */
function standIn(name: string, ends: { name: string; at: number; kind: string }[]) {
  let events: Events | undefined;
  const host = {
    exited: false,
    killed: 0,
    attach(e: Events | undefined) {
      events = e;
    },
    send(m: ToHost) {
      if (m.t === 'end') {
        ends.push({ name, at: performance.now(), kind: m.kind });
        queueMicrotask(() =>
          events?.onMessage({ t: 'done', status: 'failed', kind: 'timeout', message: 'the host said so' }),
        );
      }
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
  const call = (id: number) => events?.onMessage({ t: 'call', id, binding: 'a.b', argsJson: '{}' });
  return { host, run: host as unknown as HostProcess, done, call };
}

function params(wheel: DeadlineWheel, timeoutMs: number | null): RunParams {
  return {
    code: 'while (true) {}',
    config: { bindings: [], clockMs: 0, seed: 's' },
    onCall: undefined,
    timeoutMs,
    spentMs: 0,
    excludeBindingWaits: false,
    memoryMb: 64,
    outputBytes: 65_536,
    outputCap: 'shared',
    maxConcurrentCalls: 4,
    watchdogGraceMs: 60_000,
    signal: undefined,
    cancel: undefined,
    readResident: () => undefined,
    residentTicker: new ResidentTicker(),
    deadlines: wheel,
  };
}

/** setTimeout calls while `fn` runs. */
async function timeoutsArmed(fn: () => Promise<void>): Promise<number> {
  const timeouts = vi.spyOn(globalThis, 'setTimeout');
  try {
    await fn();
    return timeouts.mock.calls.length;
  } finally {
    timeouts.mockRestore();
  }
}

/** Advances the fake clock 1 ms at a time (every timer due fires at its own ms) until `until`. */
async function stepTo(until: number): Promise<void> {
  while (performance.now() < until) await vi.advanceTimersByTimeAsync(1);
}

describe("the runs' deadlines on one timer an engine", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('forty runs with mixed budgets, started at different times, each end at its budget, in deadline order, with the deadline text', async () => {
    const wheel = new DeadlineWheel();
    const ends: { name: string; at: number; kind: string }[] = [];
    const t0 = performance.now();
    // Budgets out of order, some equal, some shorter than a deadline already armed.
    const budgets = [700, 90, 90, 400, 55, 1200, 300, 300, 30, 950];
    const runs: { name: string; due: number; budget: number; result: Promise<RunResult> }[] = [];
    for (let i = 0; i < 40; i++) {
      const budget = budgets[(i * 7) % budgets.length] as number;
      const name = `run ${i}`;
      const h = standIn(name, ends);
      runs.push({
        name,
        budget,
        due: performance.now() + budget,
        result: new Run(h.run, params(wheel, budget)).execute(),
      });
      // Started 0–2 ms apart.
      await vi.advanceTimersByTimeAsync(i % 3);
    }
    await stepTo(t0 + 1400);
    const outcomes = await Promise.all(runs.map((r) => r.result));
    // Every run ended by its deadline, at its own deadline on the (fake) clock, not a ms early or late.
    expect(ends.map((e) => e.kind)).toEqual(runs.map(() => 'timeout'));
    for (const r of runs) expect(ends.find((e) => e.name === r.name)?.at).toBe(r.due);
    // In deadline order.
    const byDeadline = [...runs].sort(
      (a, b) => a.due - b.due || Number(a.name.slice(4)) - Number(b.name.slice(4)),
    );
    expect(ends.map((e) => e.name)).toEqual(byDeadline.map((r) => r.name));
    // The contract's failure kind and text, the run's own budget in it.
    for (const [i, r] of runs.entries()) {
      expect(outcomes[i]?.outcome.status).toBe('failed');
      expect(outcomes[i]?.outcome.failure).toEqual({ kind: 'timeout', message: deadlineMessage(r.budget) });
      expect(outcomes[i]?.outcome.failure?.message).toBe(`execution deadline reached (${r.budget}ms)`);
    }
    // Nothing left to end: the wheel arms no timer again.
    expect(wheel.size).toBe(0);
    expect(wheel.timerArmed).toBe(false);
  });

  it('a run that ends early ends no other: the timer armed for it fires for nothing and waits for the next', async () => {
    const wheel = new DeadlineWheel();
    const ends: { name: string; at: number; kind: string }[] = [];
    const t0 = performance.now();
    const early = standIn('early', ends);
    const earlyResult = new Run(early.run, params(wheel, 100)).execute();
    await vi.advanceTimersByTimeAsync(10);
    const late = standIn('late', ends);
    const lateResult = new Run(late.run, params(wheel, 200)).execute();
    await vi.advanceTimersByTimeAsync(10);
    early.done();
    expect((await earlyResult).outcome.status).toBe('completed');
    // Past the early run's deadline (the timer armed for it): nothing ends.
    await stepTo(t0 + 150);
    expect(ends).toEqual([]);
    expect(wheel.size).toBe(1);
    expect(wheel.timerArmed).toBe(true);
    await stepTo(t0 + 215);
    expect(ends).toEqual([{ name: 'late', at: t0 + 210, kind: 'timeout' }]);
    expect((await lateResult).outcome.failure).toEqual({ kind: 'timeout', message: deadlineMessage(200) });
    expect(late.host.killed).toBe(0);
    expect(early.host.killed).toBe(0);
  });

  it('an engine with no run arms no timer, and one whose runs ended arms none again after the last one fired', async () => {
    const wheel = new DeadlineWheel();
    expect(wheel.timerArmed).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    const ends: { name: string; at: number; kind: string }[] = [];
    // Twenty back-to-back runs of one budget: one timer between them (f63d2625/33923ae1: 20).
    const armed = await timeoutsArmed(async () => {
      for (let i = 0; i < 20; i++) {
        const h = standIn(`run ${i}`, ends);
        const result = new Run(h.run, params(wheel, 1000)).execute();
        await vi.advanceTimersByTimeAsync(2);
        h.done();
        expect((await result).outcome.status).toBe('completed');
      }
    });
    expect(armed).toBe(1);
    expect(wheel.armed).toBe(1);
    // Idle: the timer armed for the first run fires once, ends nothing and is not armed again.
    const idle = await timeoutsArmed(async () => {
      await vi.advanceTimersByTimeAsync(5000);
    });
    expect(idle).toBe(0);
    expect(ends).toEqual([]);
    expect(wheel.timerArmed).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    // Busy again: a new run arms it again, and still ends at its budget.
    const h = standIn('after idle', ends);
    const t1 = performance.now();
    const result = new Run(h.run, params(wheel, 250)).execute();
    expect(wheel.timerArmed).toBe(true);
    await stepTo(t1 + 260);
    expect(ends).toEqual([{ name: 'after idle', at: t1 + 250, kind: 'timeout' }]);
    expect((await result).outcome.failure?.kind).toBe('timeout');
    // No budget, no deadline: a run without one arms nothing.
    const noBudget = standIn('no budget', ends);
    const before = wheel.armed;
    const r2 = new Run(noBudget.run, params(wheel, null)).execute();
    expect(wheel.armed).toBe(before);
    noBudget.done();
    expect((await r2).outcome.status).toBe('completed');
  });

  it('a budget shorter than the earliest armed deadline re-arms the timer and ends at its own budget', async () => {
    const wheel = new DeadlineWheel();
    const ends: { name: string; at: number; kind: string }[] = [];
    const t0 = performance.now();
    const long = standIn('long', ends);
    const longResult = new Run(long.run, params(wheel, 1000)).execute();
    expect(wheel.armed).toBe(1);
    await vi.advanceTimersByTimeAsync(10);
    const short = standIn('short', ends);
    const shortResult = new Run(short.run, params(wheel, 100)).execute();
    expect(wheel.armed).toBe(2);
    // A later deadline (re-armed for nothing would be a timer a run again): no arm.
    const mid = standIn('mid', ends);
    const midResult = new Run(mid.run, params(wheel, 500)).execute();
    expect(wheel.armed).toBe(2);
    await stepTo(t0 + 1010);
    expect(ends).toEqual([
      { name: 'short', at: t0 + 110, kind: 'timeout' },
      { name: 'mid', at: t0 + 510, kind: 'timeout' },
      { name: 'long', at: t0 + 1000, kind: 'timeout' },
    ]);
    expect((await shortResult).outcome.failure?.message).toBe(deadlineMessage(100));
    expect((await midResult).outcome.failure?.message).toBe(deadlineMessage(500));
    expect((await longResult).outcome.failure?.message).toBe(deadlineMessage(1000));
  });

  it('a wall clock that jumps moves no deadline and no budget spent', async () => {
    const wheel = new DeadlineWheel();
    const ends: { name: string; at: number; kind: string }[] = [];
    const t0 = performance.now();
    const ended = standIn('ended', ends);
    const endedResult = new Run(ended.run, params(wheel, 300)).execute();
    const finished = standIn('finished', ends);
    const finishedResult = new Run(finished.run, params(wheel, 300)).execute();
    await vi.advanceTimersByTimeAsync(20);
    // An hour back, then two forward: the monotonic clock does not move.
    vi.setSystemTime(Date.now() - 3_600_000);
    await vi.advanceTimersByTimeAsync(20);
    vi.setSystemTime(Date.now() + 7_200_000);
    await vi.advanceTimersByTimeAsync(10);
    finished.done();
    // Spent: what ran on the monotonic clock (50 ms), not the wall clock's jumps.
    expect((await finishedResult).outcome.budgetSpentMs).toBe(50);
    await stepTo(t0 + 310);
    expect(ends).toEqual([{ name: 'ended', at: t0 + 300, kind: 'timeout' }]);
    expect((await endedResult).outcome.failure).toEqual({ kind: 'timeout', message: deadlineMessage(300) });
    // The countdown that ran out counts: its whole budget spent (it read 0 before round 49's fix).
    expect((await endedResult).outcome.budgetSpentMs).toBe(300);
  });

  it("a wall clock that jumps while a budget excluding binding waits counts moves no deadline across the call's pause", async () => {
    const wheel = new DeadlineWheel();
    const ends: { name: string; at: number; kind: string }[] = [];
    const t0 = performance.now();
    const h = standIn('paused', ends);
    const result = new Run(h.run, {
      ...params(wheel, 300),
      config: { bindings: ['a.b'], clockMs: 0, seed: 's' },
      excludeBindingWaits: true,
      // The call's wait, 100 ms, does not count.
      onCall: () =>
        new Promise((resolve) => setTimeout(() => resolve({ type: 'result', valueJson: '1' }), 100)),
    }).execute();
    await vi.advanceTimersByTimeAsync(5);
    // An hour forward while the clock counts, then the call pauses it.
    vi.setSystemTime(Date.now() + 3_600_000);
    await vi.advanceTimersByTimeAsync(5);
    h.call(0);
    expect(wheel.size).toBe(0);
    await vi.advanceTimersByTimeAsync(100);
    // The call settled: the clock counts again, 290 ms left.
    expect(wheel.size).toBe(1);
    await stepTo(t0 + 420);
    expect(ends).toEqual([{ name: 'paused', at: t0 + 400, kind: 'timeout' }]);
    expect((await result).outcome.failure).toEqual({ kind: 'timeout', message: deadlineMessage(300) });
  });

  it('a closed wheel arms nothing and ends nothing', async () => {
    const wheel = new DeadlineWheel();
    const ends: { name: string; at: number; kind: string }[] = [];
    const h = standIn('open', ends);
    void new Run(h.run, params(wheel, 100)).execute();
    expect(wheel.timerArmed).toBe(true);
    wheel.close();
    expect(wheel.timerArmed).toBe(false);
    await vi.advanceTimersByTimeAsync(500);
    expect(ends).toEqual([]);
    h.done();
  });
});

describe('real hosts: programs that never yield, at once, with mixed budgets', () => {
  const engine = createEngine();
  afterAll(async () => {
    await engine.close();
  });

  it('each ends at its own budget with the deadline failure, and a quick run beside them completes', async () => {
    const budgets = [150, 400, 250, 150];
    const spinning = budgets.map((timeoutMs) =>
      engine.execute('console.log("spin"); while (true) {}', { limits: { timeoutMs } }),
    );
    const quick = engine.execute('return 41 + 1', { limits: { timeoutMs: 10_000 } });
    // Past its first turn: the host's own deadline is not the one that ends it (a later turn on
    // isolated-vm's thread, where only the engine's `end` reaches it).
    const later = engine.execute('await apps.a.b({}); while (true) {}', {
      bindings: ['a.b'],
      onCall: async () => ({ type: 'result', valueJson: '1' }),
      limits: { timeoutMs: 300, timeBudget: 'excluding-binding-waits' },
    });
    const outcomes = await Promise.all(spinning);
    for (const [i, o] of outcomes.entries()) {
      expect(o.status).toBe('failed');
      expect(o.failure?.kind).toBe('timeout');
      expect(o.failure?.message).toBe(deadlineMessage(budgets[i] as number));
      expect(o.logs.map((l) => l.text)).toEqual(['spin']);
    }
    const q = await quick;
    expect(q.status).toBe('completed');
    expect(q.valueJson).toBe('42');
    const l = await later;
    expect(l.failure).toEqual({ kind: 'timeout', message: deadlineMessage(300) });
  }, 30_000);
});
