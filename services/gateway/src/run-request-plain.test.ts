/**
 * `plainRunBody` (a submit's body checked without zod) against zod's answers: over every body
 * made from valid, invalid, absent and undefined values of each field, alone and mixed, it gives
 * either nothing (zod decides, as before) or exactly what `parseRunCodeFields` and
 * `runPlacementSchema.safeParse` give: the same values, the same keys in the same order.
 */
import { describe, expect, it } from 'vitest';
import { parseRunCodeFields, plainRunBody, runPlacementSchema } from './run-request.ts';

const ABSENT = Symbol('absent');
const variants: Record<string, unknown[]> = {
  code: [ABSENT, undefined, '', '  \n', 'return 1', ' return 2\n', 5, null, ['x']],
  description: [ABSENT, 'a run', '', ' ', 7, 'x'.repeat(5000)],
  timeoutMs: [ABSENT, undefined, 1000, 0.5, 0, -1, 1e12, '100', null, Number.POSITIVE_INFINITY, Number.NaN],
  sandbox_permissions: [ABSENT, undefined, 'read-only', 'workspace-write', 'bogus', 1],
  justification: [ABSENT, undefined, 'needs the network', '', ' '],
  style: [ABSENT, undefined, 'run_code', 'code-mode', 'other', 3],
  sessionId: [
    ABSENT,
    undefined,
    'bench',
    'a.b-c_d',
    'a..b',
    '.x',
    ':x',
    'x'.repeat(128),
    'x'.repeat(129),
    '',
    5,
  ],
  turnId: [ABSENT, undefined, 't', '', 'x'.repeat(200), 'x'.repeat(201), 1],
  callId: [ABSENT, undefined, 'c', '', 'x'.repeat(201), {}],
  connections: [
    ABSENT,
    undefined,
    [],
    ['a', 'b'],
    [''],
    ['a', 5],
    Array(100).fill('a'),
    Array(101).fill('a'),
    'a',
    null,
  ],
  approval: [ABSENT, undefined, 'hold', 'stop', 'later'],
  extra: [ABSENT, 'not a field'],
};
const fieldNames = Object.keys(variants);
const valid: Record<string, unknown> = {
  code: 'return 1',
  description: 'a run',
  timeoutMs: ABSENT,
  sandbox_permissions: ABSENT,
  justification: ABSENT,
  style: ABSENT,
  sessionId: 'bench',
  turnId: 't',
  callId: 'c',
  connections: [],
  approval: ABSENT,
  extra: ABSENT,
};
const capabilityVariants = [{}, { timeoutMs: false }, { maxTimeoutMs: 5000 }, { sandboxPermissions: false }];

function bodyOf(choice: Record<string, unknown>): Record<string, unknown> {
  const b: Record<string, unknown> = {};
  for (const k of fieldNames) if (choice[k] !== ABSENT) b[k] = choice[k];
  return b;
}

/** What the route did before: zod's two parses (and its refusal, when there is one). */
function byZod(b: Record<string, unknown>, caps: object) {
  const fields = parseRunCodeFields(b, caps);
  const placement = runPlacementSchema.safeParse(b);
  return fields.ok && placement.success ? { fields: fields.value, placement: placement.data } : undefined;
}

// A small deterministic generator (mulberry32), so a failure names a body that comes back.
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function bodies(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [bodyOf(valid)];
  // Each field through its variants, the others valid; then every pair of fields.
  for (const a of fieldNames) for (const va of variants[a] ?? []) out.push(bodyOf({ ...valid, [a]: va }));
  for (let i = 0; i < fieldNames.length; i++)
    for (let j = i + 1; j < fieldNames.length; j++) {
      const a = fieldNames[i] as string;
      const b = fieldNames[j] as string;
      for (const va of variants[a] ?? [])
        for (const vb of variants[b] ?? []) out.push(bodyOf({ ...valid, [a]: va, [b]: vb }));
    }
  // And mixes of every field at random.
  const next = random(29);
  for (let n = 0; n < 20_000; n++) {
    const choice: Record<string, unknown> = {};
    for (const k of fieldNames) {
      const vs = variants[k] ?? [];
      choice[k] = vs[Math.floor(next() * vs.length)];
    }
    out.push(bodyOf(choice));
  }
  return out;
}

describe('plainRunBody', () => {
  it("gives zod's values, keys in zod's order, or leaves the body to zod", () => {
    let plain = 0;
    let total = 0;
    for (const caps of capabilityVariants)
      for (const b of bodies()) {
        total++;
        const fast = plainRunBody(b, caps);
        if (!fast) continue;
        plain++;
        const slow = byZod(b, caps);
        const where = JSON.stringify({ b, caps });
        expect(slow, where).toBeDefined();
        expect(fast, where).toStrictEqual(slow);
        expect(Object.keys(fast.fields), where).toEqual(Object.keys(slow?.fields ?? {}));
        expect(Object.keys(fast.placement), where).toEqual(Object.keys(slow?.placement ?? {}));
        // Its own copy of the connections, as zod's.
        if (Array.isArray(b.connections)) expect(fast.placement.connections).not.toBe(b.connections);
      }
    // Most valid bodies, and what agents and the bench send, take the plain path.
    expect(plain).toBeGreaterThan(total / 50);
    const bench = {
      code: 'return 1',
      description: 'd',
      sessionId: 'bench',
      turnId: 't',
      callId: 'c',
      connections: [],
    };
    expect(plainRunBody(bench, {})).toBeDefined();
    expect(
      plainRunBody({ code: 'x', description: 'd', timeoutMs: 1e12 }, { maxTimeoutMs: 5000 })?.fields
        .timeoutMs,
    ).toBe(5000);
    // An escalation is always zod's (and the contract's) to check.
    expect(
      plainRunBody({ ...bench, sandbox_permissions: 'read-only', justification: 'why' }, {}),
    ).toBeUndefined();
  });
});
