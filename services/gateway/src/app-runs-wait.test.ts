/**
 * Runs through the gateway app's inject, no runner, on real Redis: `Prefer: wait` and the pushed
 * end (answered without reading the record or journal; too large to push: the bare id), and a 202
 * answered without reading the journal. The shared set-up is test/app-fixture.ts.
 */
import { keys } from '@islet/core';
import { describe, expect, it, vi } from 'vitest';
import { auth, onAppFixture, run } from '../test/app-fixture.ts';
import { endedByTest, listenRunEvents } from '../test/gateway-harness.ts';
import { createRunsService } from './runs-service.ts';

const { gateway, app, deps, key } = await onAppFixture();

describe('runs through inject (no runner)', () => {
  it('Prefer: wait: an attempt starting (Running, tagged) wakes no read; the end does', async () => {
    const service = createRunsService(deps);
    const res = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth(key),
      payload: run({ sessionId: 'wait-tag' }),
    });
    expect(res.statusCode).toBe(202);
    const created = await deps.runs.get(res.json().id);
    if (!created) throw new Error('run not stored');
    const get = vi.spyOn(deps.runs, 'get');
    try {
      const waiting = service.waitForEnd(created.id, 10_000);
      await new Promise((r) => setTimeout(r, 100));
      const readsBefore = get.mock.calls.length;
      expect(await deps.runs.setStatus(created, 'Running', { attempt: 1 })).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      expect(get.mock.calls.length).toBe(readsBefore);
      await deps.runs.finish(created, endedByTest());
      expect((await waiting)?.status).toBe('Cancelled');
      expect(get.mock.calls.length).toBe(readsBefore + 1);
    } finally {
      get.mockRestore();
    }
  });
  it('a 202 answers the run as accepted without reading its journal; a later read does', async () => {
    const listCalls = vi.spyOn(deps.journal, 'listCalls');
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: auth(key),
        payload: run({ sessionId: 'no-journal-read' }),
      });
      expect(res.statusCode).toBe(202);
      const body = res.json() as { id: string; status: string; calls: unknown[] };
      expect(body).toMatchObject({ status: 'Running', calls: [] });
      expect(listCalls).not.toHaveBeenCalled();
      // A call journaled afterwards shows in a read of the run (which reads the journal).
      const attempt = await deps.journal.nextAttempt(body.id);
      await deps.journal.claim(body.id, attempt, {
        index: 0,
        binding: 'crm.find',
        argsJson: '{}',
        sendNow: true,
      });
      const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${body.id}`, headers: auth(key) });
      expect(listCalls).toHaveBeenCalledWith(body.id);
      expect(read.json().calls).toEqual([expect.objectContaining({ index: 0, binding: 'crm.find' })]);
    } finally {
      listCalls.mockRestore();
    }
  });
  it('Prefer: wait: the end is pushed with the record and journal, and answered without reading them', async () => {
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10' },
      payload: run({ sessionId: 'push-end' }),
    });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await deps.redis.zrange(keys.sessionRuns('acme', 'push-end'), 0, -1))[0];
      if (!id) await new Promise((r) => setTimeout(r, 20));
    }
    if (!id) throw new Error('run not stored');
    const stored = await deps.runs.get(id);
    if (!stored) throw new Error('run not stored');
    expect(stored.pushEnd).toBe(true);
    const attempt = await deps.journal.nextAttempt(id);
    await deps.journal.claim(id, attempt, {
      index: 0,
      binding: 'crm.find',
      argsJson: '{"q":1}',
      sendNow: true,
    });
    await deps.journal.complete(id, 0, { type: 'result', valueJson: '{"found":2}' });
    const get = vi.spyOn(deps.runs, 'get');
    const list = vi.spyOn(deps.journal, 'list');
    try {
      await deps.runs.finish(stored, {
        status: 'Completed',
        result: { _tag: 'Completed', value: 2, logs: [{ level: 'log', text: 'pushed' }] },
        text: 'pushed',
        kind: 'none',
        // Stored with the record, left out of the push (includes/transition.lua): the answer is
        // the same either way.
        timings: { enqueued: 1.5, pickedUp: 2.5, engineCalled: 3.5, engineReturned: 4.5, endSent: 5.5 },
      });
      const res = await answer;
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ id, status: 'Completed', result: { value: 2 } });
      expect(JSON.stringify(body.result)).toContain('pushed');
      expect(body.calls).toEqual([expect.objectContaining({ index: 0, binding: 'crm.find' })]);
      expect(get).not.toHaveBeenCalled();
      expect(list).not.toHaveBeenCalled();
      // The answer from the pushed end is byte for byte the record a read of the run answers
      // (its description, opened when the record is built, included).
      const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
      expect(read.statusCode).toBe(200);
      expect(res.body).toBe(read.body);
      expect(body.reason).toBe(stored.description);
    } finally {
      get.mockRestore();
      list.mockRestore();
    }
  });
  it('Prefer: wait: a program or description that is not well-formed UTF-16 is answered as stored, byte for byte as a read', async () => {
    // A lone surrogate (JSON lets a body carry one): the waiter's answer shows what the record
    // holds, byte for byte as a read. A seal encodes UTF-8, so format 1's program and any
    // description open to U+FFFD; format 2's `pick` (the default) is the JSON of the program, which
    // keeps the surrogate escaped (app-runs-wait-known.test.ts runs both formats).
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10', 'content-type': 'application/json' },
      payload: JSON.stringify(
        run({ sessionId: 'push-lone', code: 'return 1 // \ud800', description: 'one \udc00' }),
      ),
    });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await deps.redis.zrange(keys.sessionRuns('acme', 'push-lone'), 0, -1))[0];
      if (!id) await new Promise((r) => setTimeout(r, 20));
    }
    const stored = id ? await deps.runs.get(id) : null;
    if (!stored) throw new Error('run not stored');
    await deps.runs.finish(stored, {
      status: 'Completed',
      result: { _tag: 'Completed', value: 1, logs: [] },
      text: '1',
      kind: 'none',
    });
    const res = await answer;
    expect(res.statusCode).toBe(200);
    const format = gateway?.config.ISLET_WRITE_FORMAT;
    expect(format === '1' || format === '2').toBe(true);
    expect(res.json()).toMatchObject({
      code: format === '1' ? 'return 1 // \ufffd' : 'return 1 // \ud800',
      reason: 'one \ufffd',
    });
    const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
    expect(res.body).toBe(read.body);
  });
  it('a run too large to push ends as its bare id; its waiter reads it (and a run nobody waits on pushes nothing)', async () => {
    const messages: string[] = [];
    const sub = await listenRunEvents(deps.redis, messages);
    try {
      // Its result over the cap (its program is not pushed: its waiter holds it, round 41 `push-lean`).
      const large = run({ sessionId: 'push-large' });
      const answer = app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: { ...auth(key), prefer: 'wait=10' },
        payload: large,
      });
      const quiet = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: auth(key),
        payload: run({ sessionId: 'push-none' }),
      });
      let id: string | undefined;
      for (let i = 0; i < 100 && !id; i++) {
        id = (await deps.redis.zrange(keys.sessionRuns('acme', 'push-large'), 0, -1))[0];
        if (!id) await new Promise((r) => setTimeout(r, 20));
      }
      const stored = id ? await deps.runs.get(id) : null;
      const unwaited = await deps.runs.get(quiet.json().id);
      if (!stored || !unwaited) throw new Error('runs not stored');
      expect(unwaited.pushEnd).toBeUndefined();
      const end: Parameters<typeof deps.runs.finish>[1] = {
        status: 'Completed',
        result: { _tag: 'Completed', value: 3, logs: [] },
        text: '3',
        kind: 'none',
      };
      await deps.runs.finish(unwaited, end);
      const value = 'x'.repeat(40_000);
      await deps.runs.finish(stored, { ...end, result: { _tag: 'Completed', value, logs: [] } });
      const res = await answer;
      expect(res.json()).toMatchObject({ id: stored.id, status: 'Completed', result: { value } });
      await new Promise((r) => setTimeout(r, 100));
      expect(messages).toContain(stored.id);
      expect(messages).toContain(unwaited.id);
      expect(messages.filter((m) => m.includes(' end'))).toEqual([]);
    } finally {
      sub.disconnect();
    }
  });
});
