import { describe, expect, it } from 'vitest';
import { placementOf, runPlacementSchema } from './run-request.ts';

// placementOf stands in for the schema's parse on a submit's path: where it answers, it must give
// exactly the schema's value (keys, their order, the values); elsewhere it defers to the schema.
const cases: Record<string, unknown>[] = [
  {},
  { code: 'x', description: 'd' },
  { sessionId: 'bench', turnId: 't', callId: 'c', connections: [] },
  {
    callId: 'c',
    connections: ['a', 'b'],
    turnId: 't',
    sessionId: 's-1.x_y',
    approval: 'hold',
    style: 'code-mode',
  },
  { style: 'run_code', approval: 'stop', extra: 1 },
  { sessionId: 'a..b' },
  { sessionId: '.a' },
  { sessionId: 'a'.repeat(128) },
  { sessionId: 'a'.repeat(129) },
  { sessionId: 'a:b' },
  { sessionId: 7 },
  { turnId: '' },
  { turnId: 'x'.repeat(200) },
  { callId: 'x'.repeat(201) },
  { connections: Array.from({ length: 100 }, (_, i) => `c${i}`) },
  { connections: Array.from({ length: 101 }, (_, i) => `c${i}`) },
  { connections: [''] },
  { connections: ['a', 3] },
  { connections: 'a' },
  { style: 'other' },
  { approval: 'later' },
  { approval: null },
  { turnId: undefined },
  { sessionId: 'ünï' },
];

describe('placementOf', () => {
  it.each(cases.map((c) => [JSON.stringify(c), c]))('agrees with the schema: %s', (_, body) => {
    const fast = placementOf(body);
    const parsed = runPlacementSchema.safeParse(body);
    if (fast === undefined) return;
    expect(parsed.success).toBe(true);
    if (!parsed.success) return;
    expect(JSON.stringify(fast)).toBe(JSON.stringify(parsed.data));
    expect(Object.keys(fast)).toEqual(Object.keys(parsed.data));
    expect(fast).toEqual(parsed.data);
    if (Array.isArray(body.connections)) expect(fast.connections).not.toBe(body.connections);
  });

  it('answers every valid case itself, and no invalid one', () => {
    for (const body of cases) {
      const parsed = runPlacementSchema.safeParse(body);
      const fast = placementOf(body);
      // `turnId: undefined` (not sent by JSON) is the one valid body left to the schema.
      if (parsed.success && !Object.values(body).includes(undefined)) expect(fast).toBeDefined();
      if (!parsed.success) expect(fast).toBeUndefined();
    }
  });
});
