/**
 * A run's outcomes that arrive over several turns while its last outcome script is still in
 * flight (Redis running and fsyncing it) go together in the next script once it is answered, not
 * one script a turn: a hundred parallel calls' answers come back a few a turn. Real Redis; the
 * first script is held in Redis with `CLIENT PAUSE … WRITE` (scripts wait like writes) so the
 * turns after it are surely "while in flight". Counted: the script calls Redis ran.
 */
import type { BindingOutcome } from '@islet/protocol';
import { describe, expect, it } from 'vitest';
import { useSuiteRedis } from '../test/test-redis.ts';
import { createTestSealer } from '../test/test-sealer.ts';
import { createCallJournal } from './call-journal.ts';

const result = (n: number): BindingOutcome => ({ type: 'result', valueJson: JSON.stringify({ n }) });
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('outcome scripts one in flight a run', () => {
  const r = useSuiteRedis();

  const scriptCalls = async (): Promise<number> => {
    const info = await r.b.info('commandstats');
    let calls = 0;
    for (const m of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(m[2]);
    return calls;
  };

  it('gathers the outcomes of the turns while one is in flight into one script; each journaled once, in order', async () => {
    const journal = createCallJournal({ redis: r.a, sealer: createTestSealer() });
    // The scripts loaded (a first EVALSHA would fail over to EVAL and count twice).
    await journal.claim('warm', 1, { index: 0, binding: 'b.t', argsJson: '{}', sendNow: true });
    await journal.complete('warm', 0, result(0));

    const run = 'in-flight-run';
    const calls = 12;
    await Promise.all(
      Array.from({ length: calls }, (_, index) =>
        journal.claim(run, 1, { index, binding: 'b.t', argsJson: `{"i":${index}}`, sendNow: true }),
      ),
    );
    const before = await scriptCalls();
    await r.b.call('CLIENT', 'PAUSE', '400', 'WRITE');
    // One outcome a turn, six turns, then six in one turn: the first script is sent at once and
    // held by the pause; everything after it is answered while it is in flight.
    const completing: Promise<{ deliverySeq: number; stored: boolean }>[] = [];
    for (let index = 0; index < 6; index++) {
      completing.push(journal.complete(run, index, result(index)));
      await turn();
    }
    for (let index = 6; index < calls; index++) completing.push(journal.complete(run, index, result(index)));
    const done = await Promise.all(completing);
    // The base sent a script a turn: 7 here (six turns of one, one of six).
    expect((await scriptCalls()) - before).toBe(2);
    expect(done.every((d) => d.stored)).toBe(true);
    // Delivered in the order they were completed, each once.
    expect(done.map((d) => d.deliverySeq)).toEqual(Array.from({ length: calls }, (_, i) => i + 1));
    const journaled = await journal.listCalls(run);
    expect(journaled.map((c) => [c.index, c.state, c.outcome])).toEqual(
      Array.from({ length: calls }, (_, i) => [i, 'done', result(i)]),
    );

    // Nothing in flight: a lone outcome is not held, its own script at the end of its turn.
    const lone = 'lone-run';
    await journal.claim(lone, 1, { index: 0, binding: 'b.t', argsJson: '{}', sendNow: true });
    const loneBefore = await scriptCalls();
    expect(await journal.complete(lone, 0, result(7))).toEqual({ deliverySeq: 1, stored: true });
    expect((await scriptCalls()) - loneBefore).toBe(1);
  });

  it('sends the held outcomes once the script ahead of them is answered, whatever it answered', async () => {
    const journal = createCallJournal({ redis: r.a, sealer: createTestSealer() });
    const run = 'in-flight-failing';
    await journal.claim(run, 1, { index: 1, binding: 'b.t', argsJson: '{}', sendNow: true });
    // Index 0 was never claimed: its script answers `missing` (an error for its caller), and the
    // outcome held behind it is still sent and journaled.
    await r.b.call('CLIENT', 'PAUSE', '150', 'WRITE');
    const unclaimed = journal.complete(run, 0, result(0));
    await turn();
    const claimed = journal.complete(run, 1, result(1));
    await expect(unclaimed).rejects.toThrow(/unclaimed/);
    expect(await claimed).toEqual({ deliverySeq: 1, stored: true });
  });
});
