/**
 * The hand-off member's reader (handed-decode.ts) against what the runner read before it
 * (msgpackr's `unpack`, then a walk turning the Lua value into Redis's answer of it), on values
 * packed by a real redis-server's cmsgpack: random tables with holes, false, maps, 64-bit and
 * fractional numbers, strings short and long, ASCII and not. And the runner's read of a member
 * (`handedOf`) calls no msgpackr `unpack`.
 */
import { runFixture, startRedis } from '@islet/testkit';
import type { Redis } from 'ioredis';
import { unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { asReply } from '../test/handed-reference.ts';
import { decodeLuaValue } from './handed-decode.ts';
import { handedOf } from './handoff-store.ts';

// msgpackr as it is, its `unpack` counted: the pick-up's read must not call it.
vi.mock('msgpackr', async (importOriginal) => {
  const actual = await importOriginal<typeof import('msgpackr')>();
  return { ...actual, unpack: vi.fn(actual.unpack) };
});

let server: Awaited<ReturnType<typeof startRedis>>;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis({ appendOnly: false });
  const { createRedis } = await import('@islet/core');
  redis = createRedis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A small deterministic generator, so a failure names its seed. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const STRINGS = [
  '',
  'a',
  'run',
  'x'.repeat(31),
  'y'.repeat(32),
  'z'.repeat(33),
  'é',
  'ü-tenant',
  '日本語',
  'k'.repeat(300),
];
const NUMBERS = [
  '0',
  '1',
  '-1',
  '127',
  '128',
  '255',
  '256',
  '-32',
  '-33',
  '-128',
  '-129',
  '65535',
  '65536',
  '-32768',
  '-32769',
  '4294967295',
  '4294967296',
  '-2147483648',
  '-2147483649',
  '1796443210812',
  '-1796443210812',
  '1.5',
  '-2.75',
  '0.1',
  '1e10 + 0.5',
  '9007199254740993',
  '2^53',
  '-2^53',
];

/** A Lua expression of a random value `depth` deep. */
function luaValue(r: () => number, depth: number): string {
  const k = r();
  if (depth <= 0 || k < 0.45) {
    const leaf = r();
    if (leaf < 0.35) return JSON.stringify(STRINGS[Math.floor(r() * STRINGS.length)]);
    if (leaf < 0.75) return `(${NUMBERS[Math.floor(r() * NUMBERS.length)]})`;
    if (leaf < 0.85) return 'true';
    if (leaf < 0.93) return 'false';
    return 'nil';
  }
  const n = Math.floor(r() * 6);
  const items: string[] = [];
  if (k < 0.8) for (let i = 0; i < n; i++) items.push(luaValue(r, depth - 1));
  // Keys of its own: holes, a key past the end, string keys.
  else
    for (let i = 0; i < n; i++) {
      const key =
        r() < 0.7 ? `[${1 + Math.floor(r() * 5)}]` : `[${JSON.stringify(STRINGS[Math.floor(r() * 4)])}]`;
      items.push(`${key} = ${luaValue(r, depth - 1)}`);
    }
  return `{${items.join(', ')}}`;
}

async function packed(expr: string): Promise<Buffer> {
  return (await redis.callBuffer('EVAL', `return cmsgpack.pack(${expr})`, 0)) as Buffer;
}

describe("the hand-off member read in one pass (cmsgpack's values)", () => {
  it('reads every random value as the msgpackr reading did', async () => {
    for (let seed = 1; seed <= 400; seed++) {
      const expr = luaValue(rng(seed), 4);
      const buf = await packed(expr);
      const want = asReply(unpack(buf));
      expect({ seed, expr, got: decodeLuaValue(buf) }).toEqual({ seed, expr, got: want });
    }
  });

  it('reads the edges: every number width, strings across 32 bytes and non-ASCII, holes and false', async () => {
    for (const n of NUMBERS) {
      const buf = await packed(`{${n}}`);
      expect(decodeLuaValue(buf)).toEqual(asReply(unpack(buf)));
    }
    for (const s of STRINGS) {
      const buf = await packed(`{${JSON.stringify(s)}, ${JSON.stringify(s)}}`);
      expect(decodeLuaValue(buf)).toEqual([s, s]);
    }
    for (const expr of [
      '{1, nil, 3}',
      '{1, false, 3}',
      '{[1] = 1, [2] = false, [3] = 3}',
      '{}',
      '{a = 1}',
      'nil',
      'false',
      'true',
    ]) {
      const buf = await packed(expr);
      expect({ expr, got: decodeLuaValue(buf) }).toEqual({ expr, got: asReply(unpack(buf)) });
    }
  });

  it("cuts each member's short strings from its own text: members read in turn, ASCII among non-ASCII", async () => {
    // The same layout, other characters: a text kept from the member before would answer its
    // strings; a non-ASCII string among short ASCII ones moves no offset of theirs.
    const members = [
      `{'w1:h:0', {'name', 'run', 'ats', '1', 'é-t', 'dev'}}`,
      `{'w2:h:1', {'eman', 'nur', 'sta', '2', 'ü-t', 'ved'}}`,
      `{'w3:h:2', {'${'x'.repeat(32)}', '${'y'.repeat(12)}', '${'z'.repeat(13)}', '日本', 'k'}}`,
    ];
    for (let round = 0; round < 2; round++)
      for (const expr of members) {
        const buf = await packed(expr);
        expect({ expr, got: decodeLuaValue(buf) }).toEqual({ expr, got: asReply(unpack(buf)) });
      }
  });

  it("a hand-off as the add's script writes it: token and answer as before (a 64-bit number a BigInt), no msgpackr unpack", async () => {
    const run = runFixture('hd1', { tenant: 'acme', mode: 'read-only' });
    const expr = `{'w1:h:0', {{'name', 'run', 'data', ${JSON.stringify(JSON.stringify({ runId: run.id, tenant: run.tenant }))}, 'ats', '1'}, '${run.id}', 0, 1796443210812, {{'id', '${run.id}', 'status', 'Running'}, 1, {'#attempt', '1'}, {1, 0}}, 1}}`;
    const buf = await packed(expr);
    const before = unpack(buf) as [unknown, unknown];
    const want = { token: String(asReply(before[0])), answer: asReply(before[1]) };
    vi.mocked(unpack).mockClear();
    expect(handedOf(buf)).toEqual(want);
    // One pass of its own: msgpackr's general reader is not on the pick-up's path.
    expect(vi.mocked(unpack)).not.toHaveBeenCalled();
    expect(handedOf(buf).answer[3]).toBe(1796443210812n);
  });
});
