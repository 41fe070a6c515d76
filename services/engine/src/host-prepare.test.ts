import { describe, expect, it } from 'vitest';
import { PrepareAhead, type PrepareTimers } from './host-prepare.ts';

/** Timers run by hand: the test says when a turn passes and when the delay has. */
function manualTimers() {
  const immediates: (() => void)[] = [];
  const timeouts = new Map<number, { fn: () => void; ms: number }>();
  let next = 1;
  const timers: PrepareTimers = {
    setImmediate: (fn) => immediates.push(fn),
    setTimeout: (fn, ms) => {
      timeouts.set(next, { fn, ms });
      return next++;
    },
    clearTimeout: (h) => {
      timeouts.delete(h as number);
    },
  };
  return {
    timers,
    turn: () => {
      for (const fn of immediates.splice(0)) fn();
    },
    elapse: () => {
      const due = [...timeouts.values()];
      timeouts.clear();
      for (const t of due) t.fn();
    },
    delays: () => [...timeouts.values()].map((t) => t.ms),
  };
}

describe('the host makes its next isolate after a run, off the end path', () => {
  it('not in the turns right after done, but once the delay passes', () => {
    const events: string[] = [];
    const clock = manualTimers();
    let n = 0;
    const ahead = new PrepareAhead(
      () => {
        events.push('made ahead');
        return ++n;
      },
      () => events.push('discarded'),
      () => events.push('error'),
      3,
      clock.timers,
    );
    // start: made in the next turn, as before
    ahead.schedule(false);
    clock.turn();
    expect(events).toEqual(['made ahead']);
    expect(
      ahead.take(
        () => true,
        () => -1,
      ),
    ).toBe(1);
    // the run ends (`done` sent): nothing is made in the following turns
    ahead.idle();
    ahead.schedule(true);
    clock.turn();
    clock.turn();
    expect(events).toEqual(['made ahead']);
    expect(clock.delays()).toEqual([3]);
    clock.elapse();
    expect(events).toEqual(['made ahead', 'made ahead']);
    expect(
      ahead.take(
        () => true,
        () => -1,
      ),
    ).toBe(2);
    expect([ahead.made, ahead.madeOnPath]).toEqual([2, 0]);
  });

  it('a run that comes before the delay makes its isolate on its path, once; the deferred make is dropped', () => {
    const clock = manualTimers();
    let ahead = 0;
    let onPath = 0;
    const prep = new PrepareAhead(
      () => ++ahead,
      () => undefined,
      () => undefined,
      3,
      clock.timers,
    );
    prep.schedule(false);
    clock.turn();
    prep.take(
      () => true,
      () => 100 + ++onPath,
    );
    prep.idle();
    prep.schedule(true);
    // a busy host: the next run is handed over at once
    expect(
      prep.take(
        () => true,
        () => 100 + ++onPath,
      ),
    ).toBe(101);
    clock.elapse();
    clock.turn();
    expect([ahead, onPath]).toEqual([1, 1]);
    expect([prep.made, prep.madeOnPath]).toEqual([1, 1]);
    // and after that run, the next is made ahead again
    prep.idle();
    prep.schedule(true);
    clock.elapse();
    expect(ahead).toBe(2);
  });

  it('one made for another heap limit is discarded, and a failed make leaves the host able to prepare', () => {
    const clock = manualTimers();
    const discarded: number[] = [];
    const prep = new PrepareAhead(
      () => 1,
      (x) => discarded.push(x),
      () => undefined,
      3,
      clock.timers,
    );
    prep.schedule(false);
    clock.turn();
    expect(() =>
      prep.take(
        () => false,
        () => {
          throw new Error('no isolate');
        },
      ),
    ).toThrow('no isolate');
    expect(discarded).toEqual([1]);
    prep.schedule(true);
    clock.elapse();
    expect(
      prep.take(
        () => true,
        () => 2,
      ),
    ).toBe(1);
  });
});
