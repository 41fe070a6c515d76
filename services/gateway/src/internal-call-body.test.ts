/**
 * The runner's call body (`POST /internal/v1/code-runs/:id/calls`) checked by hand before zod
 * (internal-call-body.ts): the hand check accepts exactly what zod accepts, returns zod's output
 * (unknown fields dropped, the schema's key order), and a refused body is zod's own problem. Then
 * the route itself on real Redis: refusals with their exact problem types and texts (bad fields,
 * the run's id, the depth limit ± 1 on the body and on the arguments, the internal token).
 * The `call-batch` body likewise (round 40 `par-calls`): `readInternalBatch` against `batchSchema`.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GatewayAppUnderTest, startGatewayApp } from '../test/gateway-harness.ts';
import {
  batchSchema,
  internalCallSchema,
  MAX_ARGS_CHARS,
  MAX_BATCH_CALLS,
  readInternalBatch,
  readInternalCall,
} from './internal-call-body.ts';
import { HttpProblem, validationProblem } from './problem-reply.ts';
import { idOf, idParams } from './routes/params.ts';

const good = { index: 3, binding: 'phone.ask_user', argsJson: '{"a":1}', attempt: 1 };

/** Bodies on every rule's edges, each as JSON would give it. */
const bodies: unknown[] = [
  good,
  { ...good, takeover: true },
  { ...good, takeover: false },
  { ...good, extra: 'dropped', nested: { a: 1 } },
  { attempt: 2, argsJson: '', binding: 'b', index: 0 },
  ...[-1, -0, 0, 1.5, 2 ** 53 - 1, 2 ** 53, 1e300, '1', null, true, [], {}].map((index) => ({
    ...good,
    index,
  })),
  ...[0, 1, 2, 0.5, 2 ** 53 - 1, 2 ** 53, -1, '1', null].map((attempt) => ({ ...good, attempt })),
  ...['', 'a', 'x'.repeat(300), 'x'.repeat(301), 1, null, ['a']].map((binding) => ({ ...good, binding })),
  ...['', 'x'.repeat(MAX_ARGS_CHARS), 'x'.repeat(MAX_ARGS_CHARS + 1), 1, null, {}].map((argsJson) => ({
    ...good,
    argsJson,
  })),
  ...['yes', 1, 0, null, {}].map((takeover) => ({ ...good, takeover })),
  { index: 3, binding: 'b', argsJson: '1' },
  { binding: 'b', argsJson: '1', attempt: 1 },
  {},
  [],
  [good],
  null,
  'a string',
  7,
  true,
];

const outcome = (f: () => unknown) => {
  try {
    return { ok: f() };
  } catch (err) {
    return { problem: err instanceof HttpProblem ? err.problem : String(err) };
  }
};

describe('readInternalCall: zod, checked by hand', () => {
  it('accepts what zod accepts with zod output, refuses what zod refuses with its problem', () => {
    for (const body of bodies) {
      const label = JSON.stringify(body)?.slice(0, 80);
      const viaZod = outcome(() => {
        const parsed = internalCallSchema.safeParse(body);
        if (!parsed.success) throw validationProblem(parsed.error);
        return parsed.data;
      });
      const byHand = outcome(() => readInternalCall(body));
      expect(byHand, label).toEqual(viaZod);
      if ('ok' in byHand)
        expect(Object.keys(byHand.ok as object), label).toEqual(Object.keys(viaZod.ok as object));
    }
  });

  it('a batch: accepts what zod accepts with zod output, refuses what zod refuses with its problem', () => {
    const call = { index: 3, binding: 'phone.ask_user', argsJson: '{"a":1}' };
    const many = (n: number) => Array.from({ length: n }, (_, index) => ({ ...call, index }));
    // Every single-call edge (less `attempt`, which a batch's call does not carry) as a batch's
    // second call, then the batch's own edges.
    const batches: unknown[] = [
      ...bodies.map((b) => ({ attempt: 1, calls: [call, b] })),
      ...bodies.map((b) => {
        if (typeof b !== 'object' || b === null || Array.isArray(b)) return { attempt: 1, calls: [b] };
        const { attempt: _attempt, ...rest } = b as Record<string, unknown>;
        return { attempt: 1, calls: [rest] };
      }),
      { attempt: 2, calls: many(100), extra: 'dropped' },
      { attempt: 1, calls: many(MAX_BATCH_CALLS) },
      { attempt: 1, calls: many(MAX_BATCH_CALLS + 1) },
      { attempt: 1, calls: [] },
      { attempt: 1, calls: {} },
      { attempt: 1, calls: null },
      { attempt: 1 },
      { calls: [call] },
      ...[0, -1, 1.5, 2 ** 53, '1', null].map((attempt) => ({ attempt, calls: [call] })),
      [],
      null,
      'text',
    ];
    for (const body of batches) {
      const label = JSON.stringify(body)?.slice(0, 100);
      const viaZod = outcome(() => {
        const parsed = batchSchema.safeParse(body);
        if (!parsed.success) throw validationProblem(parsed.error);
        return parsed.data;
      });
      const byHand = outcome(() => readInternalBatch(body));
      expect(byHand, label).toEqual(viaZod);
      if ('ok' in byHand) {
        const ok = byHand.ok as { calls: object[] };
        const zod = viaZod.ok as { calls: object[] };
        expect(Object.keys(ok), label).toEqual(Object.keys(zod));
        for (let i = 0; i < ok.calls.length; i++)
          expect(Object.keys(ok.calls[i] as object), label).toEqual(Object.keys(zod.calls[i] as object));
      }
    }
  });

  it('a valid batch is read without zod; a refused one gets zod’s problem', () => {
    const spy = vi.spyOn(batchSchema, 'safeParse');
    try {
      const calls = Array.from({ length: 100 }, (_, index) => ({ index, binding: 'b.c', argsJson: '{}' }));
      expect(readInternalBatch({ attempt: 1, calls }).calls).toHaveLength(100);
      expect(spy).not.toHaveBeenCalled();
      expect(() => readInternalBatch({ attempt: 1, calls: [...calls, { index: -1 }] })).toThrow(HttpProblem);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  it("a run's id: by hand as zod (1-200 characters), zod's error for the rest", () => {
    for (const id of ['r', 'x'.repeat(200)]) expect(idOf({ id })).toBe(id);
    for (const params of [{ id: '' }, { id: 'x'.repeat(201) }, { id: 1 }, {}, null]) {
      expect(() => idOf(params)).toThrow();
      const zodMessage = outcome(() => idParams.parse(params));
      expect(outcome(() => idOf(params))).toEqual(zodMessage);
    }
  });
});

const INTERNAL = 'internal-token-for-call-body-tests';
let gateway: GatewayAppUnderTest | undefined;
let app: FastifyInstance;

beforeAll(async () => {
  gateway = await startGatewayApp({ env: { ISLET_INTERNAL_TOKEN: INTERNAL, ISLET_JSON_MAX_DEPTH: '64' } });
  ({ app } = gateway);
});

afterAll(() => gateway?.close());

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const post = (payload: string, token = INTERNAL, id = 'no-such-run') =>
  app.inject({
    method: 'POST',
    url: `/internal/v1/code-runs/${id}/calls`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload,
  });

describe('POST /internal/v1/code-runs/:id/calls refusals', () => {
  it('a body that breaks a rule is a 400 validation problem naming the field, as zod words it', async () => {
    const res = await post(JSON.stringify({ ...good, index: -1 }));
    expect(res.statusCode).toBe(400);
    expect(String(res.headers['content-type'])).toContain('application/problem+json');
    const p = res.json();
    expect(p.type).toBe('https://islet.dev/problems/validation');
    expect(p.detail).toBe('index: Too small: expected number to be >=0');
    const missing = (await post(JSON.stringify({ index: 0, binding: 'b', argsJson: '1' }))).json();
    expect(missing.detail).toBe('attempt: Invalid input: expected number, received undefined');
    const takeover = (await post(JSON.stringify({ ...good, takeover: 'yes' }))).json();
    expect(takeover.detail).toBe('takeover: Invalid input: expected boolean, received string');
  });

  it('the depth limit ± 1: on the body (before parsing) and on the arguments (their own text)', async () => {
    // The body's own nesting: `{…,"x":[[…]]}` is 1 + the array's depth.
    const body = (arrayDepth: number) => JSON.stringify(good).replace(/}$/, `,"x":${nested(arrayDepth)}}`);
    const atLimit = await post(body(63));
    expect(atLimit.statusCode, atLimit.body).toBe(404);
    expect(atLimit.json().type).toBe('https://islet.dev/problems/not-found');
    const over = await post(body(64));
    expect(over.statusCode).toBe(400);
    expect(over.json()).toMatchObject({
      type: 'https://islet.dev/problems/json-too-deep',
      detail: 'JSON nests deeper than 64 levels',
      maxDepth: 64,
    });
    const args = (depth: number) => post(JSON.stringify({ ...good, argsJson: nested(depth) }));
    expect((await args(64)).statusCode).toBe(404);
    const deep = await args(65);
    expect(deep.statusCode).toBe(400);
    expect(deep.json()).toMatchObject({
      type: 'https://islet.dev/problems/json-too-deep',
      detail: "the call's arguments nest deeper than 64 levels",
    });
  });

  it('a wrong or missing internal token is a 401 problem; the right one reaches the route', async () => {
    for (const token of ['wrong', '', `${INTERNAL}x`]) {
      const res = await post(JSON.stringify(good), token);
      expect(res.statusCode, token).toBe(401);
      expect(res.json().type).toBe('https://islet.dev/problems/unauthorized');
    }
    const right = await post(JSON.stringify(good));
    expect(right.statusCode).toBe(404);
    expect(right.json().detail).toBe('no code run no-such-run');
  });
});
