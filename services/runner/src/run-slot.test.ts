/**
 * A parked run's resume waits for its slot but not for its lease's take-back (run-slot.ts): the
 * reclaim is unconditional, so its answer says nothing the run could act on, and awaiting it put
 * fsync'd round trips in series before the program went on (test/bench/README.md, round 45
 * `resume-nowait`). What stays ordered, read from the calls themselves (no clock): the reclaim goes
 * after the park's release answered, a next park's release after the reclaim answered; at the
 * run's end (`leaseEnding`) a reclaim sent is awaited and one not sent yet is never sent.
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
  const lease = { release: op('release'), reclaim: op('reclaim'), hold: () => void log.push('held here') };
  return { log, answer, lease };
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
    // Answered before the park's release did: the slot is taken and the run goes on; the reclaim
    // waits behind the release (never overtakes it).
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
    await l.answer();
    expect(l.log).toEqual(['release sent', 'release answered', 'reclaim sent']);
    // It parks again while its reclaim is open: the release waits for the reclaim's answer.
    expect(slot.park(() => undefined)).toBe(true);
    await tick();
    expect(l.log).toEqual(['release sent', 'release answered', 'reclaim sent']);
    await l.answer();
    expect(l.log.slice(3)).toEqual(['reclaim answered', 'release sent']);
    await l.answer();
    slot.end();
  });

  it('ending with its reclaim still behind the park release: never sent, the lease counted held for the end', async () => {
    const l = heldLease();
    const { slot } = await parkedSlot(l.lease);
    await slot.resume();
    // The program ended before the park's release answered: nothing to wait for.
    expect(slot.leaseEnding()).toBeUndefined();
    expect(l.log).toEqual(['release sent', 'held here']);
    // Asked again (the processor's, after the executor's end gave the lease back): not held again.
    expect(slot.leaseEnding()).toBeUndefined();
    expect(l.log).toEqual(['release sent', 'held here']);
    await l.answer();
    await tick();
    expect(l.log).toEqual(['release sent', 'held here', 'release answered']);
    expect(slot.reclaimsDropped).toBe(1);
    slot.end();
  });

  it('ending with its reclaim sent: the end waits for its answer', async () => {
    const l = heldLease();
    const { slot } = await parkedSlot(l.lease);
    await l.answer();
    await slot.resume();
    await tick();
    expect(l.log).toEqual(['release sent', 'release answered', 'reclaim sent']);
    const ending = slot.leaseEnding();
    expect(ending).toBeDefined();
    let ended = false;
    void ending?.then(() => {
      ended = true;
    });
    await tick();
    expect(ended).toBe(false);
    await l.answer();
    expect(ended).toBe(true);
    expect(l.log).not.toContain('held here');
    expect(slot.reclaimsDropped).toBe(0);
    expect(slot.leaseEnding()).toBeUndefined();
    slot.end();
  });

  it('a run that never parked, or holds no lease, has nothing to wait for and counts no resume', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
    const l = heldLease();
    const never = new RunSlot(gate, l.lease, () => undefined);
    await never.take();
    expect(never.leaseEnding()).toBeUndefined();
    expect(l.log).toEqual([]);
    never.end();
    const { slot } = await parkedSlot(undefined);
    await slot.resume();
    expect(slot.resumesUnawaited).toBe(0);
    expect(slot.leaseEnding()).toBeUndefined();
    slot.end();
  });

  it('a reclaim that fails is reported and settles: the run went on, its end is not held up', async () => {
    const l = heldLease();
    const errors: unknown[] = [];
    const { slot } = await parkedSlot(l.lease, errors);
    await l.answer();
    await slot.resume();
    await tick();
    const ending = slot.leaseEnding();
    expect(ending).toBeDefined();
    await l.answer(new Error('injected: Redis went away'));
    await ending;
    expect(errors.map((e) => (e as Error).message)).toEqual(['injected: Redis went away']);
    expect(slot.active).toBe(true);
    slot.end();
  });
});
