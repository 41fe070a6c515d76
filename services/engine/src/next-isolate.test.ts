import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  DELAY_ONLY_AFTER_GAP_MS,
  MAKE_MARGIN,
  NextIsolate,
  PREPARE_AFTER_RUN_DELAY_MS,
} from './next-isolate.ts';

interface Made {
  memoryMb: number;
  n: number;
}

function harness() {
  const made: number[] = [];
  const discarded: number[] = [];
  const next = new NextIsolate<Made>(
    (memoryMb) => {
      made.push(memoryMb);
      return { memoryMb, n: made.length };
    },
    (m) => discarded.push(m.n),
    () => {},
  );
  return { next, made, discarded };
}

/** A host's first run over: its isolate made at start, taken, the run ended and released. */
function afterFirstRun() {
  const h = harness();
  h.next.atStart(128);
  vi.advanceTimersByTime(0);
  h.next.take(128);
  h.next.afterRun(128);
  h.next.release();
  return h;
}

describe('NextIsolate (the host isolate made ahead of a run)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('after a run ends, makes the next isolate only once the host has slept, not on its next turn', () => {
    const { next, made } = harness();
    next.atStart(128);
    vi.advanceTimersByTime(0);
    expect(made).toEqual([128]);
    expect(next.take(128).n).toBe(1);
    next.afterRun(128);
    next.release();
    // The base made it on the next turn (setImmediate), ahead of a runner waiting for the same CPU.
    vi.advanceTimersByTime(0);
    expect(made).toHaveLength(1);
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
    expect(made).toHaveLength(2);
    expect(next.take(128).n).toBe(2);
    expect(made).toHaveLength(2);
  });

  it('a run that comes before the delay makes its isolate on arrival, and the delay makes none while it runs', () => {
    const { next, made } = harness();
    next.afterRun(128);
    expect(next.take(128).n).toBe(1);
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS * 5);
    expect(made).toEqual([128]);
    next.afterRun(128);
    next.release();
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
    expect(made).toEqual([128, 128]);
  });

  it('makes one isolate ahead however many runs ended within the delay', () => {
    const { next, made } = harness();
    next.afterRun(128);
    next.release();
    next.take(128);
    next.afterRun(128);
    next.release();
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS * 2);
    expect(made).toEqual([128, 128]);
  });

  it("makes it with the last run's heap limit; a run with another one discards it and gets its own", () => {
    const { next, made, discarded } = harness();
    next.afterRun(256);
    next.release();
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
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

  it('runs back to back (the last one came soon after the one before) make the next isolate at once', () => {
    const { next, made } = afterFirstRun();
    // The next run comes before the gap that earns the delay (back to back, or two hosts alternating).
    vi.advanceTimersByTime(DELAY_ONLY_AFTER_GAP_MS - 1);
    expect(made).toHaveLength(2);
    next.take(128);
    next.afterRun(128);
    next.release();
    expect(made).toHaveLength(3);
    // A long idle before the next run: after it, the delay again.
    vi.advanceTimersByTime(DELAY_ONLY_AFTER_GAP_MS + 10);
    next.take(128);
    next.afterRun(128);
    next.release();
    vi.advanceTimersByTime(0);
    expect(made).toHaveLength(3);
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
    expect(made).toHaveLength(4);
  });

  it('a host whose make would not fit in its last gap after the delay makes the next isolate at once', () => {
    // A clock of the test's own: each make holds the host's thread MAKE_MS of it.
    const MAKE_MS = 2;
    let clock = 0;
    const made: number[] = [];
    const next = new NextIsolate<Made>(
      (memoryMb) => {
        clock += MAKE_MS;
        made.push(memoryMb);
        return { memoryMb, n: made.length };
      },
      () => {},
      () => {},
      () => clock,
    );
    next.atStart(128);
    vi.advanceTimersByTime(0);
    expect(next.delayOnlyAfterGapMs()).toBe(PREPARE_AFTER_RUN_DELAY_MS + MAKE_MARGIN * MAKE_MS);
    next.take(128);
    let endedAt = clock;
    next.afterRun(128);
    next.release();
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
    expect(made).toHaveLength(2);
    // The next run comes half a ms past the fixed gap (3 ms) after the last one's end: the fixed
    // gap alone took the delay and left this run's isolate still being made when it came
    // (delay 1 + make 2 + …).
    clock = endedAt + DELAY_ONLY_AFTER_GAP_MS + 0.5;
    next.take(128);
    endedAt = clock;
    next.afterRun(128);
    next.release();
    expect(made).toHaveLength(3);
    // A gap that holds the delay and the make with room: the delay again.
    clock = endedAt + PREPARE_AFTER_RUN_DELAY_MS + MAKE_MARGIN * MAKE_MS + 1;
    next.take(128);
    next.afterRun(128);
    next.release();
    vi.advanceTimersByTime(0);
    expect(made).toHaveLength(3);
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
    expect(made).toHaveLength(4);
  });

  it("makes nothing after a run until the engine's prepare, however long it waits (runs close together)", () => {
    const { next, made } = afterFirstRun();
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
    expect(made).toHaveLength(2);
    // The next run soon after: its isolate made ahead, the one after it held.
    expect(next.take(128).n).toBe(2);
    next.afterRun(128);
    // The base made it on its next turn, while the engine, woken by `done`, waited for the CPU.
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS * 10);
    expect(made).toHaveLength(2);
    next.release();
    expect(made).toHaveLength(3);
    // One prepare, one make: a second does nothing.
    next.release();
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS * 10);
    expect(made).toHaveLength(3);
  });

  it('after a long gap, makes at the later of the delay and the prepare; a run taken meanwhile makes its own', () => {
    const { next, made } = harness();
    next.take(128);
    next.afterRun(128);
    // The delay passed, the engine has not read `done` yet: nothing made.
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS * 5);
    expect(made).toEqual([128]);
    next.release();
    expect(made).toEqual([128, 128]);
    vi.advanceTimersByTime(DELAY_ONLY_AFTER_GAP_MS + 10);
    next.take(128);
    next.afterRun(128);
    // The prepare before the delay: made once the delay passed.
    next.release();
    expect(made).toHaveLength(2);
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS);
    expect(made).toHaveLength(3);
    // A run before the prepare makes its own; that earlier end's delay and a late prepare make none.
    vi.advanceTimersByTime(DELAY_ONLY_AFTER_GAP_MS + 10);
    next.take(128);
    next.afterRun(128);
    expect(next.take(128).n).toBe(4);
    next.release();
    vi.advanceTimersByTime(PREPARE_AFTER_RUN_DELAY_MS * 5);
    expect(made).toHaveLength(4);
  });
});
