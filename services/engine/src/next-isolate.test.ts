import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NextIsolate, sleepThread, YIELD_AFTER_RUN_MS } from './next-isolate.ts';

interface Made {
  memoryMb: number;
  n: number;
}

function harness() {
  const made: number[] = [];
  const discarded: number[] = [];
  /** What happened, in order: `sleep <ms>` and `make <MB>`. */
  const events: string[] = [];
  const next = new NextIsolate<Made>(
    (memoryMb) => {
      made.push(memoryMb);
      events.push(`make ${memoryMb}`);
      return { memoryMb, n: made.length };
    },
    (m) => discarded.push(m.n),
    () => {},
    (ms) => events.push(`sleep ${ms}`),
  );
  return { next, made, discarded, events };
}

describe('NextIsolate (the host isolate made ahead of a run)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('after a run ends, gives the CPU away before making the next isolate; at start it makes it at once', () => {
    const { next, made, events } = harness();
    next.atStart(128);
    vi.advanceTimersByTime(0);
    expect(events).toEqual(['make 128']);
    expect(next.take(128).n).toBe(1);
    next.afterRun(128);
    // Not in the turn that sent the end; the base made it in the next one without sleeping first.
    expect(made).toHaveLength(1);
    vi.advanceTimersByTime(0);
    expect(events).toEqual(['make 128', `sleep ${YIELD_AFTER_RUN_MS}`, 'make 128']);
    expect(next.take(128).n).toBe(2);
    expect(made).toHaveLength(2);
  });

  it('sleepThread waits on a futex nobody wakes until its timeout', () => {
    expect(sleepThread(YIELD_AFTER_RUN_MS)).toBe('timed-out');
  });

  it('a run that comes first makes its isolate on arrival, and none is made (nor slept for) while it runs', () => {
    const { next, made, events } = harness();
    next.afterRun(128);
    expect(next.take(128).n).toBe(1);
    vi.advanceTimersByTime(5);
    expect(events).toEqual(['make 128']);
    next.afterRun(128);
    vi.advanceTimersByTime(0);
    expect(made).toEqual([128, 128]);
  });

  it('makes one isolate ahead however many runs ended within the delay', () => {
    const { next, made } = harness();
    next.afterRun(128);
    next.take(128);
    next.afterRun(128);
    vi.advanceTimersByTime(0);
    expect(made).toEqual([128, 128]);
  });

  it("makes it with the last run's heap limit; a run with another one discards it and gets its own", () => {
    const { next, made, discarded } = harness();
    next.afterRun(256);
    vi.advanceTimersByTime(0);
    expect(made).toEqual([256]);
    const taken = next.take(64);
    expect(taken).toEqual({ memoryMb: 64, n: 2 });
    expect(discarded).toEqual([1]);
  });

  it('a failed make reaches no run: the run makes its own', () => {
    let fail = true;
    const errors: unknown[] = [];
    const next = new NextIsolate<Made>(
      (memoryMb) => {
        if (fail) throw new Error('no isolate');
        return { memoryMb, n: 1 };
      },
      () => {},
      (e) => errors.push(e),
    );
    next.atStart(128);
    vi.advanceTimersByTime(0);
    expect(errors).toHaveLength(1);
    fail = false;
    expect(next.take(128).n).toBe(1);
  });
});
