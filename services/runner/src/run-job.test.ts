/**
 * A running job's signals (run-job.ts) are made only when asked for, and read as three eager
 * controllers did: `stop` aborted with the first abort's reason, each of `cancel`/`handBack` with its
 * own, the engine's handle told after the aborted signal's listeners and before `stop`'s, whether a
 * signal was made before its abort or after. Counted over `AbortController`'s constructor.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunJob } from './run-job.ts';

const RealController = globalThis.AbortController;
let made = 0;
beforeEach(() => {
  made = 0;
  globalThis.AbortController = class extends RealController {
    constructor() {
      super();
      made++;
    }
  };
});
afterEach(() => {
  globalThis.AbortController = RealController;
});

const jobOf = (id = 'r1') => new RunJob(id, 'read-only', 1, 2, undefined, undefined);

describe('a running job', () => {
  it('makes no AbortController until a signal is asked for, and one for each asked', () => {
    const job = jobOf();
    expect([job.runId, job.mode, job.enqueuedAtMs, job.fetchedAtMs]).toEqual(['r1', 'read-only', 1, 2]);
    expect([job.cancelled, job.handedBack, job.stopEngine.aborted]).toEqual([false, false, false]);
    expect(made).toBe(0);
    expect(job.stop.aborted).toBe(false);
    expect(made).toBe(1);
    expect(job.stop).toBe(job.stop);
    expect(made).toBe(1);
    expect([job.cancel.aborted, job.handBack.aborted]).toEqual([false, false]);
    expect(made).toBe(3);
  });

  it('a cancel with no signal made: the flags and the engine at once, the signals made aborted with its reason', () => {
    const job = jobOf();
    job.abort('cancel');
    expect(made).toBe(0);
    expect(job.cancelled).toBe(true);
    expect(job.handedBack).toBe(false);
    expect(job.stopEngine.aborted).toBe(true);
    const reason = job.stopEngine.reason as DOMException;
    expect(reason).toBeInstanceOf(DOMException);
    expect([reason.name, reason.message]).toEqual(['AbortError', 'This operation was aborted']);
    expect(job.cancel.aborted).toBe(true);
    expect(job.cancel.reason).toBe(reason);
    expect(job.stop.aborted).toBe(true);
    expect(job.stop.reason).toBe(reason);
    expect(job.handBack.aborted).toBe(false);
    // A hand-back after it: its own signal, with its own reason; `stop` and the engine keep the cancel's.
    job.abort('handBack');
    expect(job.handedBack).toBe(true);
    expect(job.handBack.aborted).toBe(true);
    expect(job.handBack.reason).not.toBe(reason);
    expect(job.stop.reason).toBe(reason);
    expect(job.stopEngine.reason).toBe(reason);
  });

  it('signals made before the abort: told in the eager order (the aborted one, the engine, stop), once', () => {
    const job = jobOf();
    const told: string[] = [];
    job.cancel.addEventListener('abort', () => told.push(`cancel engine=${job.stopEngine.aborted}`));
    job.handBack.addEventListener('abort', () => told.push('handBack'));
    job.stopEngine.listen(() => told.push(`engine stop=${job.stop.aborted}`));
    job.stop.addEventListener('abort', () => told.push('stop'));
    job.abort('cancel');
    job.abort('cancel');
    expect(told).toEqual(['cancel engine=false', 'engine stop=false', 'stop']);
    expect(job.stop.reason).toBe(job.cancel.reason);
    expect(job.stopEngine.reason).toBe(job.cancel.reason);
    job.abort('handBack');
    expect(told).toEqual(['cancel engine=false', 'engine stop=false', 'stop', 'handBack']);
  });

  it('a hand-back first: `stop` and the engine carry its reason, a later cancel its own', () => {
    const job = jobOf();
    job.abort('handBack');
    job.abort('cancel');
    expect([job.cancelled, job.handedBack]).toEqual([true, true]);
    expect(job.stop.reason).toBe(job.handBack.reason);
    expect(job.stopEngine.reason).toBe(job.handBack.reason);
    expect(job.cancel.aborted).toBe(true);
    expect(job.cancel.reason).not.toBe(job.handBack.reason);
  });

  it("another job's signals stay as they are", () => {
    const [a, b] = [jobOf('a'), jobOf('b')];
    b.stop;
    a.abort('cancel');
    expect([b.cancelled, b.handedBack, b.stopEngine.aborted, b.stop.aborted]).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});
