import type { BindingOutcome } from '@islet/protocol';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';

const result = (value: unknown): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify(value) });
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Script calls Redis has run (EVAL + EVALSHA), from INFO commandstats. */
async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) n += Number(m[1]);
  return n;
}

describe("a run's outcome groups on real Redis, one in flight", () => {
  const r = useSuiteRedis();
  const sealer = createTestSealer();

  it('outcomes finished while a group is unanswered go as one script, in order, each with its event', async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = `run-${Date.now()}-groups`;
    const streamKey = `islet:run:{${run}}:events`;
    const event = (index: number) => ({
      streamKey,
      maxLen: 100,
      type: 'call',
      sealedData: `call ${index}`,
      channel: 'test:events',
      message: `${run} call`,
    });
    for (let i = 0; i < 5; i++)
      await journal.claim(run, 1, { index: i, binding: 'b.x', argsJson: '{}', sendNow: true });
    // The outcome script loaded once (a first EVALSHA's NOSCRIPT and its EVAL are not what is counted).
    await journal.claim(`${run}-warm`, 1, { index: 0, binding: 'b.x', argsJson: '{}', sendNow: true });
    await journal.complete(`${run}-warm`, 0, result('warm'), { ...event(0), streamKey: `${streamKey}-warm` });
    const before = await scriptCalls(r.b);
    // Redis holds write commands (the outcome scripts) until unpaused: the first group stays unanswered.
    await r.b.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    const done: Promise<{ deliverySeq: number; stored: boolean }>[] = [];
    try {
      // Five outcomes, each finished in a turn of its own (App answers read one a turn).
      for (const i of [0, 1, 2, 3, 4]) {
        done.push(journal.complete(run, i, result(i), event(i)));
        await turn();
      }
    } finally {
      await r.b.call('CLIENT', 'UNPAUSE');
    }
    const answers = await Promise.all(done);
    expect(answers.map((a) => a.deliverySeq)).toEqual([1, 2, 3, 4, 5]);
    expect(answers.every((a) => a.stored)).toBe(true);
    // Index 0's script, then 1–4 together (e8feb7a0: one script a turn, 5). INFO's own call is not one.
    expect((await scriptCalls(r.b)) - before).toBe(2);
    const rows = await r.a.xrange(streamKey, '-', '+');
    expect(rows.map(([, f]) => f[3])).toEqual(['call 0', 'call 1', 'call 2', 'call 3', 'call 4']);
    const entries = await journal.list(run);
    expect(entries.map((e) => [e.index, e.deliverySeq, e.outcome])).toEqual(
      [0, 1, 2, 3, 4].map((i) => [i, i + 1, result(i)]),
    );
  });

  it("a lone outcome goes in its own turn's script, not held", async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = `run-${Date.now()}-lone`;
    await journal.claim(run, 1, { index: 0, binding: 'b.x', argsJson: '{}', sendNow: true });
    const before = await scriptCalls(r.b);
    expect(await journal.complete(run, 0, result('one'))).toEqual({ deliverySeq: 1, stored: true });
    expect((await scriptCalls(r.b)) - before).toBe(1);
  });

  it("a held group with an unclaimed call's outcome fails that call and journals the others", async () => {
    const journal = createCallJournal({ redis: r.a, sealer });
    const run = `run-${Date.now()}-fail`;
    for (let i = 0; i < 2; i++)
      await journal.claim(run, 1, { index: i, binding: 'b.x', argsJson: '{}', sendNow: true });
    await r.b.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    let first: Promise<unknown>;
    const held: Promise<unknown>[] = [];
    try {
      first = journal.complete(run, 0, result(0));
      await turn();
      // Index 1 was claimed; index 7 never was: the script answers `missing` for it, and 9 with it.
      held.push(journal.complete(run, 1, result(1)));
      await turn();
      held.push(journal.complete(run, 7, result(7)));
      await turn();
    } finally {
      await r.b.call('CLIENT', 'UNPAUSE');
    }
    expect(await first).toEqual({ deliverySeq: 1, stored: true });
    const settled = await Promise.allSettled(held);
    expect(settled[0]).toEqual({ status: 'fulfilled', value: { deliverySeq: 2, stored: true } });
    expect(settled[1]?.status).toBe('rejected');
  });
});
