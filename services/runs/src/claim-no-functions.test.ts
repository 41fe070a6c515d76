// The claim script makes no function at a call (round 49 `binding-hop`): Redis runs a script's body
// at every call, so each `local function` in it was a closure made again each time (four a claim:
// ~6.8 k of Redis's ~95 k instructions a lone call's claim, test/bench/README.md). Its claims written
// in line must answer and store as before: a group's calls one after another, each branch.
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';
import { luaSource } from './lua-scripts.ts';

/** Script calls Redis has run (EVAL + EVALSHA), from INFO commandstats. */
async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) n += Number(m[1]);
  return n;
}

const source = { connectionId: 'c1', connectionName: 'App', kind: 'tool' as const, name: 'x' };

describe('the claim script', () => {
  it('defines no function (its text outside comments)', () => {
    const code = luaSource('claim-1', { CLAIM_FIELDS: 12 })
      .split('\n')
      .map((line) => line.replace(/--.*$/, ''))
      .join('\n');
    expect(code.match(/\bfunction\b/g)).toBeNull();
    expect(code).toContain('repeat');
  });
});

describe('claims in one group on real Redis', () => {
  const r = useSuiteRedis();
  const sealer = createTestSealer();

  it('new, the same call again in-flight, another new sharing its source, a mismatch; then done, superseded, a takeover', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = `run-${Date.now()}-claim-group`;
    // The script loaded once (a first EVALSHA's NOSCRIPT and its EVAL are not what is counted).
    await journal.claim(`${run}-warm`, 1, { index: 0, binding: 'b.x', argsJson: '{}', sendNow: true });
    const before = await scriptCalls(r.b);
    const group = await Promise.all([
      journal.claim(run, 1, { index: 0, binding: 'b.x', argsJson: '{"a":1}', source, sendNow: true }),
      journal.claim(run, 1, { index: 0, binding: 'b.x', argsJson: '{"a":1}', source, sendNow: true }),
      journal.claim(run, 1, { index: 1, binding: 'b.x', argsJson: '{"a":2}', source, sendNow: true }),
      journal.claim(run, 1, { index: 1, binding: 'b.y', argsJson: '{"a":2}', source }),
      journal.claim(run, 1, { index: 2, binding: 'b.x', argsJson: '{}' }),
    ]);
    expect(group.map((g) => g.kind)).toEqual(['new', 'in-flight', 'new', 'mismatch', 'new']);
    expect(group[3]).toEqual({ kind: 'mismatch', expected: { binding: 'b.x' } });
    expect((await scriptCalls(r.b)) - before).toBe(1);

    const entries = await journal.list(run);
    expect(entries.map((e) => [e.index, e.binding, e.state, e.attempt])).toEqual([
      [0, 'b.x', 'sent', 1],
      [1, 'b.x', 'sent', 1],
      [2, 'b.x', 'pending', 1],
    ]);
    // One source text a journal, shared by the binding's two calls.
    const fields = await r.a.hkeys(`islet:journal:{${run}}`);
    expect(fields.filter((f) => f.startsWith('#s:'))).toHaveLength(1);

    await journal.complete(run, 0, { type: 'result', valueJson: '7' });
    const later = await Promise.all([
      journal.claim(run, 2, { index: 0, binding: 'b.x', argsJson: '{"a":1}', source, sendNow: true }),
      journal.claim(run, 0, { index: 1, binding: 'b.x', argsJson: '{"a":2}', source }),
      journal.claim(run, 2, { index: 2, binding: 'b.x', argsJson: '{}', takeover: true, sendNow: true }),
      journal.claim(run, 2, { index: 1, binding: 'b.x', argsJson: '{"a":2}', source }),
    ]);
    expect(later).toEqual([
      { kind: 'done', outcome: { type: 'result', valueJson: '7' }, deliverySeq: 1 },
      { kind: 'superseded' },
      { kind: 'new', token: expect.any(String) },
      { kind: 'unknown' },
    ]);
    const after = await journal.list(run);
    expect(after.find((e) => e.index === 2)).toMatchObject({ state: 'sent', attempt: 2 });
  });
});
