/**
 * A waited answer read from the pushed end with the submit's own program, request and description
 * (run-reads.ts `KnownRun`) and its record built at once (`recordInHand`), round 40 `end-turn`:
 * byte for byte the record a read of the run answers, for every end kind (Completed, Failed kinds,
 * Cancelled, a run with calls, a run over the push cap, an end a runner of the previous release
 * wrote), in both stored formats; no text parsed for it but the push and the end's result, so the
 * submit's request (`pick`'s or `request`'s JSON) is not parsed again; a program or description
 * that does not open to itself (a lone surrogate: the seal's UTF-8 makes it U+FFFD) answered as
 * stored. Since round 41 (`push-lean`) the push (`<id> end2`) leaves out what its waiter holds (the
 * submit's program, request, description and plain fields): every end kind's push carries only
 * END_PUSH_FIELDS and its answer is still the read's bytes; a waiter that did not submit the run
 * (another service, as the MCP wait: its read run) answers from it too, one with no run in hand
 * reads the run; a whole push (`<id> end`, a runner of the previous release) is still answered from.
 */
import { keys } from '@islet/core';
import { createRunStore, END_PUSH_FIELDS } from '@islet/runs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { endLikePreviousRelease } from '../../runs/test/previous-end-push.ts';
import { auth, run } from '../test/app-fixture.ts';
import {
  endedByTest,
  type GatewayAppUnderTest,
  listenRunEvents,
  startGatewayApp,
  type TestGatewayDeps,
} from '../test/gateway-harness.ts';
import { failedEnd } from '../test/next-listen.ts';
import { createRunsService } from './runs-service.ts';

type End = Parameters<TestGatewayDeps['runs']['finish']>[1];

const ENDS: [string, End][] = [
  [
    'Completed',
    {
      status: 'Completed',
      result: { _tag: 'Completed', value: { a: [1, 'two'] }, logs: [{ level: 'log', text: 'printed' }] },
      text: 'printed\n{"a":[1,"two"]}',
      kind: 'none',
    },
  ],
  [
    'Completed, a text of its own',
    {
      status: 'Completed',
      result: { _tag: 'Completed', value: 'v', logs: [] },
      text: 'not rendered',
      kind: 'none',
    },
  ],
  ['Failed (exception)', failedEnd('exception', 'Error', 'boom')],
  ['Failed (timeout)', failedEnd('timeout', 'Timeout', 'the run took longer than 5000 ms')],
  ['Failed (output-limit)', failedEnd('output-limit', 'OutputTooLarge', 'too much output')],
  ['Cancelled', failedEnd('abort', 'Cancelled', 'cancelled by the client', 'Cancelled')],
];

describe.each(['1', '2'])('a waited answer from its pushed end, format %s', (format) => {
  let gateway: GatewayAppUnderTest | undefined;
  let app: FastifyInstance;
  let deps: TestGatewayDeps;
  let key: string;
  // Every message on the end channel (the pushes read by `pushOf`).
  let sub: Awaited<ReturnType<typeof startGatewayApp>>['deps']['redis'] | undefined;
  const messages: string[] = [];

  beforeAll(async () => {
    gateway = await startGatewayApp({
      env: { ISLET_BODY_LIMIT_BYTES: '131072', ISLET_WRITE_FORMAT: format },
    });
    ({ app, deps } = gateway);
    await deps.tenants.createTenant({ id: 'acme', name: 'Acme' });
    key = (await deps.tenants.createKey('acme', ['apps.use', 'sessions.read'])).key;
    sub = await listenRunEvents(deps.redis, messages);
  });
  afterAll(async () => {
    sub?.disconnect();
    await gateway?.close();
  });

  /** The run's end message (its tag and its record's fields), once Redis delivered it. */
  async function pushOf(id: string): Promise<{ tag: string; record: Record<string, string> | undefined }> {
    const ours = () => messages.find((m) => m === id || m.startsWith(`${id} end`));
    for (let i = 0; i < 100 && !ours(); i++) await new Promise((r) => setTimeout(r, 10));
    const message = ours();
    if (!message) throw new Error('no end message');
    const cut = message.indexOf(' ', id.length + 1);
    if (cut < 0) return { tag: message.slice(id.length + 1), record: undefined };
    const [flat] = JSON.parse(message.slice(cut + 1)) as [string[]];
    const record: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) record[flat[i]!] = flat[i + 1]!;
    return { tag: message.slice(id.length + 1, cut), record };
  }

  /** A lean push: tagged `end2`, only the fields an execution and end write, the stored values. */
  async function expectLeanPush(id: string) {
    const { tag, record } = await pushOf(id);
    expect(tag).toBe('end2');
    if (!record) throw new Error('no record pushed');
    const stored = await deps.redis.hgetall(keys.run(id));
    for (const name of Object.keys(record)) expect(END_PUSH_FIELDS).toContain(name);
    for (const name of ['pick', 'code', 'request', 'description', 'session', 'tenant', 'createdAt'])
      expect(record).not.toHaveProperty(name);
    expect(Object.keys(stored).filter((n) => n === 'pick' || n === 'code').length).toBe(1);
    for (const [name, value] of Object.entries(record)) expect(stored[name]).toBe(value);
  }

  /** Submits with `Prefer: wait`, ends the run with `end` (after `before`), and reads it back. */
  async function waited(
    session: string,
    end: End,
    extra: Record<string, unknown> = {},
    before?: (id: string) => Promise<void>,
    ender: Pick<TestGatewayDeps['runs'], 'finish'> = deps.runs,
  ) {
    // The end is finished once the waiter listens (else it is read, not taken from the push).
    const listen = vi.spyOn(deps.hub, 'listen');
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10', 'content-type': 'application/json' },
      payload: JSON.stringify(run({ sessionId: session, ...extra })),
    });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await deps.redis.zrange(keys.sessionRuns('acme', session), 0, -1))[0];
      if (!id) await new Promise((r) => setTimeout(r, 20));
    }
    const stored = id ? await deps.runs.get(id) : null;
    if (!id || !stored) throw new Error('run not stored');
    for (let i = 0; i < 100 && !listen.mock.calls.some(([k]) => k === id); i++)
      await new Promise((r) => setTimeout(r, 10));
    listen.mockRestore();
    await before?.(id);
    // Every text parsed while the end is answered, and any read of the run.
    const get = vi.spyOn(deps.runs, 'get');
    const parse = vi.spyOn(JSON, 'parse');
    let res: Awaited<typeof answer>;
    let parsed: string[];
    let reads: number;
    try {
      await ender.finish(stored, end);
      res = await answer;
      parsed = parse.mock.calls.map(([text]) => String(text));
    } finally {
      reads = get.mock.calls.length;
      get.mockRestore();
      parse.mockRestore();
    }
    const read = await app.inject({ method: 'GET', url: `/v1/code-runs/${id}`, headers: auth(key) });
    return { res, read, stored, parsed, reads, id };
  }

  for (const [name, end] of ENDS)
    it(`${name}: the answer is the read's bytes, the submit's program and request not parsed again`, async () => {
      const { res, read, stored, parsed, reads, id } = await waited(
        `known-${format}-${name.replace(/\W/g, '')}`,
        end,
      );
      await expectLeanPush(id);
      // Answered from the push (no read of the run), which is the one text parsed with the run's
      // fields in it; the others are the end's result (and text), no program or request.
      expect(reads).toBe(0);
      expect(parsed.filter((t) => t.includes('"id",'))).toHaveLength(1);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(read.body);
      expect(res.json()).toMatchObject({ id: stored.id, status: end.status, code: 'return 1' });
      // The request's JSON (and `pick`'s `[code, request]`) is what its open would parse.
      expect(parsed.filter((t) => t.includes('"bindings"'))).toEqual([]);
    });

  it('a run with calls: the answer is the read bytes, its calls in it', async () => {
    const { res, read, parsed, reads, id } = await waited(
      `known-${format}-calls`,
      ENDS[0]![1],
      {},
      async (id) => {
        const attempt = await deps.journal.nextAttempt(id);
        await deps.journal.claim(id, attempt, {
          index: 0,
          binding: 'crm.find',
          argsJson: '{"q":1}',
          sendNow: true,
        });
        await deps.journal.complete(id, 0, { type: 'result', valueJson: '{"found":2}' });
        await deps.journal.claim(id, attempt, {
          index: 1,
          binding: 'crm.get',
          argsJson: '{}',
          sendNow: true,
        });
        await deps.journal.complete(id, 1, { type: 'error', message: 'no', reason: 'Error' } as never);
      },
    );
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(read.body);
    expect(res.json().calls).toHaveLength(2);
    expect(parsed.filter((t) => t.includes('"bindings"'))).toEqual([]);
    expect(reads).toBe(0);
    // Two small calls: under end3's floor (END3_MIN_BYTES), `end2` in both formats.
    await expectLeanPush(id);
  });

  it('an end written by a runner of the previous release (format 1 fields, the whole record pushed as `end`): the read bytes', async () => {
    // afaaca7's runner writes `result` and `text`/`textRef` whatever this gateway's format, and the
    // releases before round 41 push the whole record.
    const previous = createRunStore(deps.redis, deps.sealer, { writeFormat: '1' });
    const restore = await endLikePreviousRelease(deps.redis);
    try {
      for (const [name, end] of [ENDS[0]!, ENDS[2]!]) {
        const { res, read, reads, id } = await waited(
          `known-${format}-prev-${name.replace(/\W/g, '')}`,
          end,
          {},
          undefined,
          previous,
        );
        expect(reads).toBe(0);
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe(read.body);
        const { tag, record } = await pushOf(id);
        expect(tag).toBe('end');
        // The program (format 1's `code`, format 2's `pick`, as this gateway's submit wrote it).
        expect(record?.pick ?? record?.code).toBeDefined();
        expect(record).toHaveProperty('description');
      }
    } finally {
      restore();
    }
  });

  it('a run whose program is over the push cap is pushed (the program is not in it), the read bytes', async () => {
    const { res, read, reads, id } = await waited(`known-${format}-large-code`, ENDS[0]![1], {
      code: `return 1 // ${'x'.repeat(40_000)}`,
    });
    expect(reads).toBe(0);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(read.body);
    await expectLeanPush(id);
  });

  it('a run whose end is over the push cap: its waiter reads it, the read bytes', async () => {
    const value = 'x'.repeat(40_000);
    const { res, read, reads, id } = await waited(`known-${format}-large`, {
      status: 'Completed',
      result: { _tag: 'Completed', value, logs: [] },
      text: value,
      kind: 'none',
    } as End);
    expect(reads).toBe(1);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(read.body);
    expect((await pushOf(id)).tag).toBe('');
    expect(messages).toContain(id);
  });

  it('a program and description that are not well-formed UTF-16: answered as stored, the read bytes', async () => {
    const { res, read } = await waited(`known-${format}-lone`, ENDS[0]![1], {
      code: 'return 1 // \ud800',
      description: 'one \udc00',
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(read.body);
    // A seal encodes UTF-8: format 1's program and any description open to U+FFFD; format 2's
    // `pick` is the JSON of the program, which keeps the surrogate escaped.
    expect(res.json()).toMatchObject({
      code: format === '1' ? 'return 1 // \ufffd' : 'return 1 // \ud800',
      reason: 'one \ufffd',
    });
  });

  it('a waiter that did not submit the run answers from the lean push with the run it read; one with none reads it', async () => {
    // Two other services wait on the same run (as an MCP wait on another replica does: it reads the
    // run first, runs-service.ts `waitForEnd`'s `known`), beside the submit's own waiter.
    const reader = createRunsService(deps);
    const blind = createRunsService(deps);
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10' },
      payload: run({ sessionId: `others-${format}` }),
    });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await deps.redis.zrange(keys.sessionRuns('acme', `others-${format}`), 0, -1))[0];
      if (!id) await new Promise((r) => setTimeout(r, 20));
    }
    const read = id ? await deps.runs.get(id) : null;
    if (!read) throw new Error('run not stored');
    const withRun = reader.waitForEnd(read.id, 10_000, undefined, undefined, read);
    const withNone = blind.waitForEnd(read.id, 10_000);
    await new Promise((r) => setTimeout(r, 100));
    const get = vi.spyOn(deps.runs, 'get');
    let gets: string[];
    let ended: [Awaited<typeof withRun>, Awaited<typeof withNone>];
    try {
      await deps.runs.finish(read, ENDS[2]![1]);
      ended = await Promise.all([withRun, withNone]);
      expect((await answer).statusCode).toBe(200);
    } finally {
      gets = get.mock.calls.map(([runId]) => runId);
      get.mockRestore();
    }
    await expectLeanPush(read.id);
    const [fromPush, fromRead] = ended;
    if (!fromPush || !fromRead) throw new Error('no end');
    // The read run's waiter built its record from the push; the other read the run (once).
    expect(gets).toEqual([read.id]);
    expect(reader.recordInHand(fromPush)).toBeDefined();
    expect(blind.recordInHand(fromRead)).toBeUndefined();
    const body = (await app.inject({ method: 'GET', url: `/v1/code-runs/${read.id}`, headers: auth(key) }))
      .body;
    expect(JSON.stringify(await reader.record(fromPush))).toBe(body);
    expect(JSON.stringify(await blind.record(fromRead))).toBe(body);
    expect(JSON.parse(body)).toMatchObject({ status: 'Failed', code: 'return 1' });
  });

  it('a pushed end record is in hand at once (no read, no await); a read run is not', async () => {
    const service = createRunsService(deps);
    // A waited submit's run pushes its end; this service waits on it too and reads the same push.
    const answer = app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(key), prefer: 'wait=10' },
      payload: run({ sessionId: `in-hand-${format}` }),
    });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await deps.redis.zrange(keys.sessionRuns('acme', `in-hand-${format}`), 0, -1))[0];
      if (!id) await new Promise((r) => setTimeout(r, 20));
    }
    const created = id ? await deps.runs.get(id) : null;
    if (!created) throw new Error('run not stored');
    expect(service.recordInHand(created)).toBeUndefined();
    const waiting = service.waitForEnd(created.id, 10_000, undefined, undefined, created);
    await new Promise((r) => setTimeout(r, 100));
    await deps.runs.finish(created, endedByTest());
    const ended = await waiting;
    if (!ended) throw new Error('no end');
    expect((await answer).statusCode).toBe(200);
    const listCalls = vi.spyOn(deps.journal, 'listCalls');
    try {
      const inHand = service.recordInHand(ended);
      expect(inHand).toMatchObject({ id: created.id, status: 'Cancelled', calls: [] });
      expect(JSON.stringify(await service.record(ended))).toBe(JSON.stringify(inHand));
      expect(listCalls).not.toHaveBeenCalled();
      const read = await deps.runs.get(created.id);
      if (!read) throw new Error('run gone');
      expect(service.recordInHand(read)).toBeUndefined();
      expect(JSON.stringify(await service.record(read))).toBe(JSON.stringify(inHand));
    } finally {
      listCalls.mockRestore();
    }
  });
});
