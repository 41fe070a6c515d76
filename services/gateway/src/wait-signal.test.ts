/**
 * A waiting submit's early end (its client gone, the app closing) as a WaitSignal: the same answers
 * as `clientGone`'s AbortSignal in every case, one listener on the app's closing signal whatever
 * the number of requests, none left behind, and no AbortController made for a wait. Real gateway
 * deps and Redis for the waits; the replies are stand-ins (an emitter with `writableFinished`).
 */
import { EventEmitter, getEventListeners } from 'node:events';
import type { FastifyReply } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { endedByTest, type GatewayAppUnderTest, startGatewayApp } from '../test/gateway-harness.ts';
import { clientGone } from './problem-reply.ts';
import { createRunsService } from './runs-service.ts';
import {
  type ClockTimers,
  createRecheckClock,
  createRequestGone,
  type WaitSignal,
  waitSignalOf,
} from './wait-signal.ts';

class FakeRaw extends EventEmitter {
  writableFinished = false;
}
const fakeReply = () => {
  const raw = new FakeRaw();
  return { reply: { raw } as unknown as FastifyReply, raw };
};

type Step = 'finish' | 'close' | 'closing';
/** Each way of building the signal, driven through the same steps; what `aborted` and the wakes say. */
function drive(
  make: (closing: AbortSignal, reply: FastifyReply) => WaitSignal,
  steps: { before: Step[]; after: Step[] },
) {
  const closing = new AbortController();
  const { reply, raw } = fakeReply();
  const act = (s: Step) => {
    if (s === 'finish') raw.writableFinished = true;
    else if (s === 'close') raw.emit('close');
    else closing.abort();
  };
  for (const s of steps.before) act(s);
  const signal = make(closing.signal, reply);
  let woken = 0;
  signal.onAbort(() => woken++);
  for (const s of steps.after) act(s);
  return { aborted: signal.aborted, woken };
}

const CASES: Array<{ before: Step[]; after: Step[] }> = [
  { before: [], after: [] },
  { before: [], after: ['close'] },
  { before: [], after: ['finish', 'close'] },
  { before: [], after: ['closing'] },
  { before: [], after: ['closing', 'close'] },
  { before: [], after: ['close', 'closing'] },
  { before: [], after: ['finish', 'close', 'closing'] },
  { before: ['closing'], after: [] },
  { before: ['closing'], after: ['close'] },
];

describe('a request’s WaitSignal', () => {
  it.each(CASES)('answers as clientGone’s AbortSignal: $before then $after', (steps) => {
    const lean = (closing: AbortSignal, reply: FastifyReply) => createRequestGone(closing).gone(reply);
    const abortSignal = (closing: AbortSignal, reply: FastifyReply) =>
      waitSignalOf(clientGone(reply, closing));
    expect(drive(lean, steps)).toEqual(drive(abortSignal, steps));
  });

  it('listens on the closing signal once for every request, and forgets each request as it closes', () => {
    const closing = new AbortController();
    const requests = createRequestGone(closing.signal);
    const raws = Array.from({ length: 50 }, () => {
      const { reply, raw } = fakeReply();
      requests.gone(reply);
      return raw;
    });
    expect(getEventListeners(closing.signal, 'abort')).toHaveLength(1);
    expect(requests.open).toBe(50);
    for (const raw of raws) {
      raw.writableFinished = true;
      raw.emit('close');
    }
    expect(requests.open).toBe(0);
  });

  it('a removed wake is not called', () => {
    const closing = new AbortController();
    const { reply, raw } = fakeReply();
    const signal = createRequestGone(closing.signal).gone(reply);
    const calls: string[] = [];
    const off = signal.onAbort(() => calls.push('removed'));
    signal.onAbort(() => calls.push('kept'));
    off();
    raw.emit('close');
    expect(calls).toEqual(['kept']);
    expect(signal.aborted).toBe(true);
  });
});

/** Real timers, counted: what the clock arms and clears. */
function countedTimers() {
  const armed: number[] = [];
  let cleared = 0;
  // Timers armed and neither fired nor cleared, now and at most.
  let live = 0;
  let mostLive = 0;
  const timers: ClockTimers = {
    set: (fn, ms) => {
      armed.push(ms);
      mostLive = Math.max(mostLive, ++live);
      return setTimeout(() => {
        live--;
        fn();
      }, ms);
    },
    clear: (t) => {
      cleared++;
      live--;
      clearTimeout(t as NodeJS.Timeout);
    },
  };
  return { timers, armed, cleared: () => cleared, mostLive: () => mostLive };
}

describe('the waits’ re-check clock', () => {
  it('arms one timer for many waits that each leave before their re-check', () => {
    const { timers, armed, cleared } = countedTimers();
    const clock = createRecheckClock(16, timers);
    for (let i = 0; i < 200; i++) {
      const takeBack = clock.after(1000, () => {
        throw new Error('a wait taken back was woken');
      });
      takeBack();
    }
    expect(armed).toHaveLength(1);
    expect(cleared()).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('wakes each wait once, not before its due time, in due order; a taken-back one never', async () => {
    const { timers, mostLive } = countedTimers();
    const clock = createRecheckClock(16, timers);
    const woken: { name: string; late: number }[] = [];
    const file = (name: string, ms: number) => {
      const due = performance.now() + ms;
      return clock.after(ms, () => woken.push({ name, late: performance.now() - due }));
    };
    file('c', 90);
    file('a', 10);
    const takeBack = file('x', 40);
    file('b', 50);
    takeBack();
    while (clock.pending > 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 150));
    expect(woken.map((w) => w.name)).toEqual(['a', 'b', 'c']);
    for (const w of woken) expect(w.late).toBeGreaterThanOrEqual(0);
    // One timer at a time for every wait filed: an earlier wait re-arms it, a firing arms the next
    // slot left. (How many times it is armed is the event loop's: a timer that fires a little before
    // its slot by performance.now() finds nothing due and arms again.)
    expect(mostLive()).toBe(1);
  });
});

describe('waitForEnd with a WaitSignal', () => {
  let gateway: GatewayAppUnderTest;
  let key: string;
  beforeAll(async () => {
    gateway = await startGatewayApp();
    await gateway.deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
    key = (await gateway.deps.tenants.createKey('acme', ['apps.use'])).key;
  });
  afterAll(async () => {
    await gateway?.close();
  });

  const submit = (headers: Record<string, string> = {}) =>
    gateway.app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { authorization: `Bearer ${key}`, ...headers },
      payload: { code: 'return 1', description: 'Return one' },
    });

  it('ends when its client goes, with the run as it is, and leaves no wake behind', async () => {
    const created = await submit();
    expect(created.statusCode).toBe(202);
    const id = created.json().id as string;
    const closing = new AbortController();
    const { reply, raw } = fakeReply();
    const gone = createRequestGone(closing.signal).gone(reply);
    let listening = 0;
    let removed = 0;
    const spy: WaitSignal = {
      get aborted() {
        return gone.aborted;
      },
      onAbort(fn) {
        listening++;
        const off = gone.onAbort(fn);
        return () => {
          removed++;
          off();
        };
      },
    };
    const service = createRunsService(gateway.deps);
    // Long enough that only the client's going can end it before the test's own timeout.
    const waited = service.waitForEnd(id, 60_000, spy);
    for (let i = 0; i < 500 && listening === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(listening).toBe(1);
    raw.emit('close');
    const run = await waited;
    expect(run?.id).toBe(id);
    expect(run?.status).toBe('Running');
    expect(removed).toBe(1);
  });

  it('a waited submit makes no AbortController more than an unwaited one', async () => {
    const Real = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Real {
      constructor() {
        super();
        made++;
      }
    };
    try {
      made = 0;
      expect((await submit()).statusCode).toBe(202);
      const unwaited = made;
      made = 0;
      // No runner: the wait ends at its deadline (1 s) with the run still queued.
      const res = await submit({ prefer: 'wait=1' });
      expect(res.statusCode).toBe(202);
      expect(res.headers['preference-applied']).toBe('wait=1');
      expect(made).toBe(unwaited);
    } finally {
      globalThis.AbortController = Real;
    }
  });

  it('waits ended by their runs’ ends arm no re-check timer of their own', async () => {
    const service = createRunsService(gateway.deps);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const created = await submit();
      expect(created.statusCode).toBe(202);
      ids.push(created.json().id as string);
    }
    const spy = vi.spyOn(globalThis, 'setTimeout');
    // The re-check a wait had (1 s), whoever arms it: the service's clock or the wait itself.
    const rechecks = () => spy.mock.calls.filter(([, ms]) => Number(ms) >= 900 && Number(ms) <= 1100).length;
    const began = performance.now();
    try {
      for (const id of ids) {
        const run = await gateway.deps.runs.get(id);
        if (!run) throw new Error('run not stored');
        const waited = service.waitForEnd(id, 60_000);
        await gateway.deps.runs.finish(run, endedByTest());
        expect((await waited)?.status).toBe('Cancelled');
      }
      // One wait after another, each a few ms: the first arms the clock and the rest find it armed
      // (one more for each second the test outlasts, on a loaded machine). Each wait armed its own before.
      expect(rechecks()).toBeLessThanOrEqual(1 + Math.ceil((performance.now() - began) / 1000));
    } finally {
      spy.mockRestore();
    }
  });
});
