import { describe, expect, it } from 'vitest';
import { TurnBatch } from './turn-batch.ts';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnBatch', () => {
  it('sends the items one key gathered in a turn together, and each caller gets its own result', async () => {
    const sent: [string, number[]][] = [];
    const batch = new TurnBatch<number, string>(
      async (key, items) => {
        sent.push([key, items]);
        return items.map((n) => `${key}:${n * 10}`);
      },
      { maxItems: 100, maxBytes: 1000 },
    );
    const answers = await Promise.all([
      batch.add('a', 1, 1),
      batch.add('b', 2, 1),
      batch.add('a', 3, 1),
      // Added after an await, still in the same turn (a microtask later).
      Promise.resolve().then(() => batch.add('a', 4, 1)),
    ]);
    expect(answers).toEqual(['a:10', 'b:20', 'a:30', 'a:40']);
    expect(sent).toEqual([
      ['a', [1, 3, 4]],
      ['b', [2]],
    ]);
    // A later turn is a new group.
    await turn();
    expect(await batch.add('a', 5, 1)).toBe('a:50');
    expect(sent.at(-1)).toEqual(['a', [5]]);
  });

  it('items of separate turns (one per I/O callback, timers) go in separate groups', async () => {
    const sizes: number[] = [];
    const batch = new TurnBatch<number, number>(
      async (_key, items) => {
        sizes.push(items.length);
        return items;
      },
      { maxItems: 100, maxBytes: 1000 },
    );
    const first = batch.add('k', 1, 1);
    await new Promise((r) => setTimeout(r, 5));
    await Promise.all([first, batch.add('k', 2, 1)]);
    expect(sizes).toEqual([1, 1]);
  });

  it('sends a full group at once and starts a new one past maxItems or maxBytes', async () => {
    const sent: number[][] = [];
    const batch = new TurnBatch<number, number>(
      async (_key, items) => {
        sent.push(items);
        return items;
      },
      { maxItems: 3, maxBytes: 10 },
    );
    const byCount = [1, 2, 3, 4].map((n) => batch.add('k', n, 1));
    // Sent before the turn ends: the group was full.
    expect(sent).toEqual([[1, 2, 3]]);
    await Promise.all(byCount);
    expect(sent).toEqual([[1, 2, 3], [4]]);
    sent.length = 0;
    // 6 + 6 passes 10 bytes: the second item starts a group; one item larger than the bound goes alone.
    await Promise.all([
      batch.add('k', 1, 6),
      batch.add('k', 2, 6),
      batch.add('k', 3, 50),
      batch.add('k', 4, 1),
    ]);
    expect(sent).toEqual([[1], [2], [3], [4]]);
  });

  it("a failed send fails every item of its group with the send's error, and only that group", async () => {
    const batch = new TurnBatch<string, string>(
      async (key, items) => {
        if (key === 'down') throw new Error('connection lost');
        return items;
      },
      { maxItems: 100, maxBytes: 1000 },
    );
    const results = await Promise.allSettled([
      batch.add('down', 'x', 1),
      batch.add('up', 'y', 1),
      batch.add('down', 'z', 1),
    ]);
    expect(results).toEqual([
      { status: 'rejected', reason: new Error('connection lost') },
      { status: 'fulfilled', value: 'y' },
      { status: 'rejected', reason: new Error('connection lost') },
    ]);
    // A send that throws synchronously, and one answering too few results, fail their items too.
    const sync = new TurnBatch<number, number>(
      (() => {
        throw new Error('bad arguments');
      }) as never,
      { maxItems: 100, maxBytes: 1000 },
    );
    await expect(sync.add('k', 1, 1)).rejects.toThrow('bad arguments');
    const short = new TurnBatch<number, number>(async () => [1], { maxItems: 100, maxBytes: 1000 });
    const pair = await Promise.allSettled([short.add('k', 1, 1), short.add('k', 2, 1)]);
    expect(pair[0]).toEqual({ status: 'fulfilled', value: 1 });
    expect(pair[1]?.status).toBe('rejected');
  });
});
