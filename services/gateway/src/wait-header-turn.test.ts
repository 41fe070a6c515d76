/**
 * The end hop's gateway turn (round 50 `end-turn`): a waited submit's `preference-applied` is set
 * in the submit's turn, before the wait, not in the pushed end's turn (the one on the path to the
 * response's first bytes); a wait that fails takes it back, so its problem does not carry it; a
 * record is built without a set made for its waiting calls when none wait. Real redis-server, the
 * gateway app through inject (test/app-fixture.ts), no runner: the test ends the run.
 */
import { createRequire } from 'node:module';
import type { StoredRun } from '@islet/runs';
import { describe, expect, it, vi } from 'vitest';
import { auth, expectProblem, onAppFixture, run } from '../test/app-fixture.ts';
import { endedByTest, type TestGatewayDeps } from '../test/gateway-harness.ts';
import { toRecord } from './record.ts';

const { app, deps, key } = await onAppFixture();

// fastify's reply class (not in its types): the app's replies are its instances.
const Reply = createRequire(import.meta.url)('fastify/lib/reply.js') as {
  prototype: { header: (...a: unknown[]) => unknown };
};

type Listener = Parameters<TestGatewayDeps['hub']['listen']>[1];

describe("a waited submit's gateway turns", () => {
  it("sets preference-applied before the wait: the pushed end's turn sets no header of it", async () => {
    const listen = deps.hub.listen.bind(deps.hub);
    // Where each `preference-applied` was set: before or after the run's end reached its waiter.
    const setAt: string[] = [];
    let phase = 'submit';
    let waiting: ((id: string) => void) | undefined;
    const listened = new Promise<string>((resolve) => {
      waiting = resolve;
    });
    // Every reply's header calls pass here (the app's replies are this class's instances).
    const proto = Reply.prototype;
    const realHeader = proto.header;
    proto.header = function (this: unknown, ...args: unknown[]) {
      if (args[0] === 'preference-applied') setAt.push(phase);
      return realHeader.apply(this, args);
    };
    const spy = vi.spyOn(deps.hub, 'listen').mockImplementationOnce((k: string, fn: Listener) => {
      const off = listen(k, (tag, payload) => {
        if (payload !== undefined) phase = 'pushed end';
        fn(tag, payload);
      });
      waiting?.(k);
      return off;
    });
    try {
      const answer = app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: { ...auth(key), prefer: 'wait=10' },
        payload: run({ sessionId: 'header-turn' }),
      });
      const id = await listened;
      const stored = await deps.runs.get(id);
      if (!stored) throw new Error('run not stored');
      expect(stored.pushEnd).toBe(true);
      await deps.runs.finish(stored, endedByTest());
      const res = await answer;
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id, status: 'Cancelled' });
      expect(res.headers['preference-applied']).toBe('wait=10');
      expect(phase).toBe('pushed end');
      expect(setAt).toEqual(['submit']);
    } finally {
      proto.header = realHeader;
      spy.mockRestore();
    }
  });

  it('a wait that fails answers its problem without preference-applied', async () => {
    const get = deps.runs.get.bind(deps.runs);
    let failing = '';
    const spy = vi.spyOn(deps.runs, 'get').mockImplementation((id: string) => {
      if (id === failing) return Promise.reject(new Error('the read failed (test)'));
      return get(id);
    });
    const listen = deps.hub.listen.bind(deps.hub);
    const listening = vi.spyOn(deps.hub, 'listen').mockImplementationOnce((k: string, fn: Listener) => {
      // The waited run's reads fail from its first re-check on (its deadline, 1 s).
      failing = k;
      return listen(k, fn);
    });
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: { ...auth(key), prefer: 'wait=1' },
        payload: run({ sessionId: 'header-turn-fails' }),
      });
      expect(failing).not.toBe('');
      expectProblem(res, 500, 'internal');
      expect(res.headers['preference-applied']).toBeUndefined();
      expect(res.headers.location).toBe(`/v1/code-runs/${failing}`);
    } finally {
      spy.mockRestore();
      listening.mockRestore();
    }
  });
});

describe('toRecord', () => {
  it('makes no set when no call waits for a decision', () => {
    const Real = globalThis.Set;
    let made = 0;
    globalThis.Set = class<T> extends Real<T> {
      constructor(values?: Iterable<T> | null) {
        super(values);
        made++;
      }
    } as SetConstructor;
    try {
      const stored = {
        id: 'r1',
        tenant: 'acme',
        session: 's1',
        turn: 't1',
        callId: 'c1',
        status: 'Completed',
        mode: 'isolate',
        code: 'return 1',
        description: 'one',
        request: { connections: [], bindings: [] },
        createdAt: 1,
        updatedAt: 2,
        attempts: 1,
        cancelRequested: false,
        clockMs: 1,
        seed: 'r1',
        result: { _tag: 'Completed', value: 1, logs: [] },
        text: '1',
      } as unknown as StoredRun;
      const record = toRecord(stored, []);
      expect(record).toMatchObject({ id: 'r1', status: 'Completed', calls: [], text: '1' });
      expect(made).toBe(0);
    } finally {
      globalThis.Set = Real;
    }
  });
});
