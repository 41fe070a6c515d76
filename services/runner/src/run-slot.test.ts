/**
 * A parked run's resume waits for its slot but not for its lease's take-back (run-slot.ts): the
 * reclaim is unconditional, so its answer says nothing the run could act on, and awaiting it put
 * fsync'd round trips in series before the program went on (test/bench/README.md, round 45
 * `resume-nowait`). What stays ordered, read from the calls themselves (no clock): the reclaim
 * goes after the park's release answered, a next park's release after the reclaim answered, and
 * `leaseSettled` (what a run's end awaits before it gives the lease back) covers every change made.
 */
import { describe, expect, it } from 'vitest';
import { RunSlot } from './run-slot.ts';
import { SlotGate } from './slot-gate.ts';

const tick = () => new Promise((r) => setImmediate(r));

/** A lease whose every release and reclaim waits until the test answers it. */
function heldLease() {
  const log: string[] = [];
  const answers: Array<(err?: Error) => void> = [];
  const op = (name: string) => () => {
    log.push(`${name} sent`);
    return new Promise<void>((resolve, reject) => {
      answers.push((err) => {
        log.push(`${name} answered`);
        if (err) reject(err);
        else resolve();
      });
    });
  };
  /** Answers the oldest change still open (with `err`, a failure). */
  const answer = async (err?: Error) => {
    const next = answers.shift();
    if (!next) throw new Error('no lease change open');
    next(err);
    await tick();
  };
  return { log, answer, lease: { release: op('release'), reclaim: op('reclaim') } };
}

async function parkedSlot(lease: ReturnType<typeof heldLease>['lease'] | undefined, errors: unknown[] = []) {
  const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
  const slot = new RunSlot(gate, lease, (err) => errors.push(err));
  await slot.take();
  expect(slot.park(() => undefined)).toBe(true);
  return { gate, slot };
}

describe('RunSlot: a resume does not wait for its lease', () => {
  it('goes on before the reclaim answered; the reclaim follows the park release, a next park follows the reclaim', async () => {
    const l = heldLease();
    const { gate, slot } = await parkedSlot(l.lease);
    expect(l.log).toEqual(['release sent']);
    // Answered before the park's release did: the slot is taken, the run goes on, the reclaim waits
    // behind the release (never overtakes it).
    let resumed = false;
    void slot.resume().then(() => {
      resumed = true;
    });
    await tick();
    expect(resumed).toBe(true);
    expect(slot.active).toBe(true);
    expect(gate.state()).toMatchObject({ busy: 1, parkedWithIsolate: 0 });
    expect(slot.resumesUnawaited).toBe(1);
    expect(l.log).toEqual(['release sent']);
    let settled = false;
    void slot.leaseSettled()?.then(() => {
      settled = true;
    });
    await l.answer();
    expect(l.log).toEqual(['release sent', 'release answered', 'reclaim sent']);
    expect(settled).toBe(false);
    // The run parks again while its reclaim is open: its release waits for the reclaim's answer.
    expect(slot.park(() => undefined)).toBe(true);
    await tick();
    expect(l.log).toEqual(['release sent', 'release answered', 'reclaim sent']);
    await l.answer();
    expect(l.log.slice(3)).toEqual(['reclaim answered', 'release sent']);
    // `leaseSettled` made before the second park resolves with the reclaim; a new one covers the release.
    expect(settled).toBe(true);
    const pending = slot.leaseSettled();
    expect(pending).toBeDefined();
    await l.answer();
    await pending;
    expect(slot.leaseSettled()).toBeUndefined();
    slot.end();
  });

  it('a run that never parked, or holds no lease, has nothing pending and counts no resume', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
    const l = heldLease();
    const never = new RunSlot(gate, l.lease, () => undefined);
    await never.take();
    expect(never.leaseSettled()).toBeUndefined();
    never.end();
    const { slot } = await parkedSlot(undefined);
    await slot.resume();
    expect(slot.resumesUnawaited).toBe(0);
    expect(slot.leaseSettled()).toBeUndefined();
    slot.end();
  });

  it('a reclaim that fails is reported and settles: the run went on, the end is not held up', async () => {
    const l = heldLease();
    const errors: unknown[] = [];
    const { slot } = await parkedSlot(l.lease, errors);
    await l.answer();
    await slot.resume();
    const settling = slot.leaseSettled();
    expect(settling).toBeDefined();
    await l.answer(new Error('injected: Redis went away'));
    await settling;
    expect(errors.map((e) => (e as Error).message)).toEqual(['injected: Redis went away']);
    expect(slot.leaseSettled()).toBeUndefined();
    expect(slot.active).toBe(true);
    slot.end();
  });
});
