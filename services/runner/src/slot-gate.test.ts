import { describe, expect, it } from 'vitest';
import { CallParking } from './call-parking.ts';
import { RunSlot } from './run-slot.ts';
import { type ParkedRun, SlotGate } from './slot-gate.ts';

const tick = () => new Promise((r) => setImmediate(r));
const parkedRun = (): ParkedRun & { released: number } => {
  const run = { released: 0, release: () => run.released++ };
  return run;
};

describe('SlotGate', () => {
  it('parked runs hold no slot: with 2 slots and 5 waiting runs a new job still starts', async () => {
    const gate = new SlotGate({ slots: 2, parkedMax: 8, isolatesMax: 8 });
    expect(gate.concurrency).toBe(10);
    const waiting = [parkedRun(), parkedRun(), parkedRun(), parkedRun(), parkedRun()];
    for (const run of waiting) {
      await gate.take();
      expect(gate.park(run)).toBe(true);
    }
    expect(gate.state()).toEqual({ busy: 0, parkedWithIsolate: 5, parkedReleased: 0 });
    let started = false;
    void gate.take().then(() => {
      started = true;
    });
    await tick();
    expect(started).toBe(true);
  });

  it('past the isolate budget the run parked longest is released, never one coming back', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 8, isolatesMax: 2 });
    const [a, b, c] = [parkedRun(), parkedRun(), parkedRun()];
    for (const run of [a, b]) {
      await gate.take();
      gate.park(run);
    }
    // `c` holds the slot; `a` was answered and waits for it.
    await gate.take();
    const resuming = gate.resume(a);
    await tick();
    // `c` parks too: three isolates for a budget of two. `a` is coming back, so `b` goes.
    gate.park(c);
    await resuming;
    expect([a.released, b.released, c.released]).toEqual([0, 1, 0]);
    expect(gate.state()).toEqual({ busy: 1, parkedWithIsolate: 1, parkedReleased: 1 });
  });

  it('refuses to park past parkedMax: the run keeps its slot', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 1, isolatesMax: 1 });
    await gate.take();
    expect(gate.park(parkedRun())).toBe(true);
    await gate.take();
    expect(gate.park(parkedRun())).toBe(false);
    expect(gate.state().busy).toBe(1);
  });

  it('a fetch waits for a free slot, and runs coming back go before it and before new jobs', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
    const run = parkedRun();
    await gate.take();
    gate.park(run);
    await gate.take(); // a new job took the freed slot
    const order: string[] = [];
    const fetch = gate.whenFetchable('t1', () => false).then((go) => order.push(go));
    const back = gate.resume(run).then(() => order.push('resumed'));
    await tick();
    expect(order).toEqual([]);
    gate.release();
    await back;
    await tick();
    expect(order).toEqual(['resumed']);
    gate.release();
    await fetch;
    expect(order).toEqual(['resumed', 'fetch']);
    gate.fetched('t1', false);
    expect(gate.state().busy).toBe(0);
  });

  it('a slot reserved for a fetched job is its own: a job waiting for a slot does not take it', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
    expect(await gate.whenFetchable('t1', () => false)).toBe('fetch');
    // A job BullMQ fetched with a completion waits; the reserved job takes its slot at once.
    let waited = false;
    const other = gate.take().then(() => {
      waited = true;
    });
    await tick();
    expect(waited).toBe(false);
    await gate.take('t1');
    expect(gate.state().busy).toBe(1);
    await tick();
    expect(waited).toBe(false);
    gate.release();
    await other;
    expect(gate.state().busy).toBe(1);
  });

  it('a closing worker’s fetch is let through', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 0, isolatesMax: 0 });
    await gate.take();
    let closing = false;
    const fetch = gate.whenFetchable('t1', () => closing);
    closing = true;
    gate.wakeFetches();
    await fetch;
  });

  it('with no slot free, a fetch says `later` while jobs fetched before have not started', async () => {
    const gate = new SlotGate({ slots: 2, parkedMax: 4, isolatesMax: 4 });
    expect(await gate.whenFetchable('t1', () => false)).toBe('fetch');
    expect(await gate.whenFetchable('t2', () => false)).toBe('fetch');
    // Both slots are reserved for fetched jobs BullMQ has not started: waiting would deadlock.
    expect(await gate.whenFetchable('t3', () => false)).toBe('later');
    await gate.take('t1');
    await gate.take('t2');
    let third: string | undefined;
    void gate
      .whenFetchable('t3', () => false)
      .then((go) => {
        third = go;
      });
    await tick();
    expect(third).toBeUndefined();
    gate.release();
    await tick();
    expect(third).toBe('fetch');
  });

  it("a slot kept for a completion's started next job: a waiting fetch says `later`, only that job takes it", async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
    await gate.take();
    let fetch: string | undefined;
    void gate
      .whenFetchable('t1', () => false)
      .then((go) => {
        fetch = go;
      });
    await tick();
    expect(fetch).toBeUndefined();
    // The run ends; its completion brought the next job (the same token), its lease taken already.
    gate.keepFor('t0');
    gate.release();
    await tick();
    expect(fetch).toBe('later');
    let waited = false;
    const other = gate.take().then(() => {
      waited = true;
    });
    await tick();
    expect(waited).toBe(false);
    await gate.take('t0');
    expect(gate.state().busy).toBe(1);
    gate.release();
    await other;
    expect(waited).toBe(true);
  });

  it('a parked run waiting to come back is seen, so no slot is kept past it', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
    const run = parkedRun();
    await gate.take();
    gate.park(run);
    await gate.take();
    expect(gate.noResumeWaiting()).toBe(true);
    const back = gate.resume(run);
    await tick();
    expect(gate.noResumeWaiting()).toBe(false);
    gate.release();
    await back;
    expect(gate.noResumeWaiting()).toBe(true);
  });
});

describe('CallParking', () => {
  it('parks a run whose call waits, takes a slot back before the answer reaches the program', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 4 });
    const slot = new RunSlot(gate, undefined, () => undefined);
    await slot.take();
    const parking = new CallParking(slot, 5);
    let answer!: (v: { outcome: { type: 'result'; valueJson: string } }) => void;
    const live = parking.wrap(() => new Promise((r) => (answer = r)));
    const call = live({ index: 0, binding: 'a.b', argsJson: '{}' });
    await new Promise((r) => setTimeout(r, 30));
    expect(gate.state()).toMatchObject({ busy: 0, parkedWithIsolate: 1 });
    // Another job holds the only slot when the answer comes: the program gets it only after.
    await gate.take();
    let delivered = false;
    void call.then(() => {
      delivered = true;
    });
    answer({ outcome: { type: 'result', valueJson: '1' } });
    await tick();
    expect(delivered).toBe(false);
    gate.release();
    await call;
    expect(gate.state()).toMatchObject({ busy: 1, parkedWithIsolate: 0 });
    expect(parking.close()).toBe(false);
    slot.end();
    expect(gate.state().busy).toBe(0);
  });

  it('released, the engine is answered at once with a suspended stop; settled() waits for the real answer', async () => {
    const gate = new SlotGate({ slots: 1, parkedMax: 4, isolatesMax: 0 });
    const slot = new RunSlot(gate, undefined, () => undefined);
    await slot.take();
    const parking = new CallParking(slot, 5);
    let answer!: (v: { outcome: { type: 'result'; valueJson: string } }) => void;
    const live = parking.wrap(() => new Promise((r) => (answer = r)));
    const got = await live({ index: 0, binding: 'a.b', argsJson: '{}' });
    expect(got.outcome).toMatchObject({ type: 'stop', code: 'suspended' });
    expect(parking.released).toBe(true);
    expect(gate.state()).toMatchObject({ busy: 0, parkedReleased: 1 });
    let settled = false;
    const wait = parking.settled().then(() => {
      settled = true;
    });
    await tick();
    expect(settled).toBe(false);
    answer({ outcome: { type: 'result', valueJson: '1' } });
    await wait;
    parking.close();
    await slot.resume();
    expect(gate.state()).toMatchObject({ busy: 1, parkedReleased: 0 });
    slot.end();
  });
});
