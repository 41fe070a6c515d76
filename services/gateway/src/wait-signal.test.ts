/**
 * A waiting submit's early end (its client gone, the app closing) as a WaitSignal: the same answers
 * as `clientGone`'s AbortSignal in every case, one listener on the app's closing signal whatever
 * the number of requests, none left behind, and no AbortController made for a wait. Real gateway
 * deps and Redis for the waits; the replies are stand-ins (an emitter with `writableFinished`).
 */
import { EventEmitter, getEventListeners } from 'node:events';
import type { FastifyReply } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayAppUnderTest, startGatewayApp } from '../test/gateway-harness.ts';
import { clientGone } from './problem-reply.ts';
import { createRunsService } from './runs-service.ts';
import { createRequestGone, type WaitSignal, waitSignalOf } from './wait-signal.ts';

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
});
