import { describe, expect, it } from 'vitest';
import { TurnBatch } from './turn-batch.ts';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Past the answer's callback (a microtask) and the check phase it schedules. */
const turnAfterAnswer = async () => {
  await null;
  await turn();
};

/** A send whose answers the test gives, one group at a time, in the order sent. */
function heldSend() {
  const sent: [string, number[]][] = [];
  const answers: { resolve: (r: number[]) => void; reject: (e: unknown) => void; items: number[] }[] = [];
  const send = (key: string, items: number[]) => {
    sent.push([key, items]);
    return new Promise<number[]>((resolve, reject) => answers.push({ resolve, reject, items }));
  };
  const answerNext = () => {
    const a = answers.shift();
    if (!a) throw new Error('no group in flight');
    a.resolve(a.items.map((n) => n * 10));
  };
  const failNext = (error: Error) => answers.shift()?.reject(error);
  return { sent, send, answerNext, failNext };
}

describe('TurnBatch with one group in flight a key (oneInFlight)', () => {
  it("holds a key's items while its group is unanswered and sends them as one group when it is answered", async () => {
    const s = heldSend();
    const batch = new TurnBatch<number, number>(s.send, { maxItems: 100, maxBytes: 1000, oneInFlight: true });
    const first = batch.add('run', 1, 1);
    await turn();
    expect(s.sent).toEqual([['run', [1]]]);
    // Three more turns, one item each (three App answers read in three gateway turns): held.
    const later: Promise<number>[] = [];
    for (const n of [2, 3, 4]) {
      later.push(batch.add('run', n, 1));
      await turn();
    }
    expect(s.sent).toEqual([['run', [1]]]);
    expect(batch.counts).toEqual({ groups: 1, items: 1, held: 3 });
    s.answerNext();
    expect(await first).toBe(10);
    // Sent at the end of the turn the answer came in, all three together, in the order they came.
    await turn();
    expect(s.sent).toEqual([
      ['run', [1]],
      ['run', [2, 3, 4]],
    ]);
    s.answerNext();
    expect(await Promise.all(later)).toEqual([20, 30, 40]);
    expect(batch.counts).toEqual({ groups: 2, items: 4, held: 3 });
  });

  it('a lone item with nothing in flight goes at the end of its turn, and another key is never held', async () => {
    const s = heldSend();
    const batch = new TurnBatch<number, number>(s.send, { maxItems: 100, maxBytes: 1000, oneInFlight: true });
    const a = batch.add('a', 1, 1);
    await turn();
    // In one turn: 'a' held (its group is unanswered), 'b' not.
    const aHeld = batch.add('a', 4, 1);
    const b = batch.add('b', 2, 1);
    await turn();
    // 'b' went at its own turn's end all the same; 'a''s item stays held through that check phase.
    expect(s.sent).toEqual([
      ['a', [1]],
      ['b', [2]],
    ]);
    expect(batch.counts.held).toBe(1);
    s.answerNext();
    s.answerNext();
    expect(await Promise.all([a, b])).toEqual([10, 20]);
    await turn();
    expect(s.sent.at(-1)).toEqual(['a', [4]]);
    s.answerNext();
    expect(await aHeld).toBe(40);
    // Answered: the key's next lone item goes at once again.
    const c = batch.add('a', 3, 1);
    await turn();
    expect(s.sent.at(-1)).toEqual(['a', [3]]);
    s.answerNext();
    expect(await c).toBe(30);
    expect(batch.counts.held).toBe(1);
  });

  it("a full group is sent at once even with one in flight, and the groups keep the items' order", async () => {
    const s = heldSend();
    const batch = new TurnBatch<number, number>(s.send, { maxItems: 3, maxBytes: 1000, oneInFlight: true });
    const all = [batch.add('k', 1, 1)];
    await turn();
    for (const n of [2, 3, 4, 5]) all.push(batch.add('k', n, 1));
    // 2, 3, 4 filled a group: sent before the turn ends, behind the one in flight.
    expect(s.sent).toEqual([
      ['k', [1]],
      ['k', [2, 3, 4]],
    ]);
    await turn();
    expect(s.sent.length).toBe(2);
    s.answerNext();
    await turnAfterAnswer();
    // One of two answered: 5 is still held behind 2, 3, 4.
    expect(s.sent.length).toBe(2);
    s.answerNext();
    await turnAfterAnswer();
    expect(s.sent.at(-1)).toEqual(['k', [5]]);
    s.answerNext();
    expect(await Promise.all(all)).toEqual([10, 20, 30, 40, 50]);
  });

  it('a failed group fails each of its items, and the held group is sent after it all the same', async () => {
    const s = heldSend();
    const batch = new TurnBatch<number, number>(s.send, { maxItems: 100, maxBytes: 1000, oneInFlight: true });
    const first = [batch.add('k', 1, 1), batch.add('k', 2, 1)];
    await turn();
    const held = [batch.add('k', 3, 1)];
    await turn();
    held.push(batch.add('k', 4, 1));
    await turn();
    s.failNext(new Error('connection lost'));
    expect(await Promise.allSettled(first)).toEqual([
      { status: 'rejected', reason: new Error('connection lost') },
      { status: 'rejected', reason: new Error('connection lost') },
    ]);
    await turn();
    expect(s.sent.at(-1)).toEqual(['k', [3, 4]]);
    // And a held group's own failure fails every item in it.
    s.failNext(new Error('script failed'));
    expect(await Promise.allSettled(held)).toEqual([
      { status: 'rejected', reason: new Error('script failed') },
      { status: 'rejected', reason: new Error('script failed') },
    ]);
    const after = batch.add('k', 5, 1);
    await turn();
    expect(s.sent.at(-1)).toEqual(['k', [5]]);
    s.answerNext();
    expect(await after).toBe(50);
  });

  it('without oneInFlight every turn is its own group, as before', async () => {
    const s = heldSend();
    const batch = new TurnBatch<number, number>(s.send, { maxItems: 100, maxBytes: 1000 });
    const all: Promise<number>[] = [];
    for (const n of [1, 2, 3]) {
      all.push(batch.add('k', n, 1));
      await turn();
    }
    expect(s.sent).toEqual([
      ['k', [1]],
      ['k', [2]],
      ['k', [3]],
    ]);
    expect(batch.counts).toEqual({ groups: 3, items: 3, held: 0 });
    for (let i = 0; i < 3; i++) s.answerNext();
    expect(await Promise.all(all)).toEqual([10, 20, 30]);
  });
});
