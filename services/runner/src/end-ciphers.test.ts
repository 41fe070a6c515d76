import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { END_CIPHERS_BATCH, endCipherStock } from './end-ciphers.ts';

// Every cipher the sealer makes, and those a seal made itself (none ready) rather than the
// sealer's restock after the turn. Named imports of node:crypto see the wrap once synced, so the
// sealer is imported after it.
const real = crypto.createCipheriv;
const made = { all: 0, onSpot: 0 };
crypto.createCipheriv = ((...args: Parameters<typeof real>) => {
  made.all++;
  if (!new Error().stack?.includes('restock')) made.onSpot++;
  return real(...args);
}) as typeof real;
syncBuiltinESMExports();
const { createSealer, generateSealKey, parseSealKeys } = await import('@islet/core');

afterAll(() => {
  crypto.createCipheriv = real;
  syncBuiltinESMExports();
});

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Past the next turn's check phase, where the sealer makes the used ciphers again (two hops). */
const afterRestock = async () => {
  await nextTurn();
  await nextTurn();
};

describe("the runner's ciphers made ahead for its ends", () => {
  it("four slots' ends in consecutive turns, once a restock is due, seal with ciphers made ahead", async () => {
    const slots = 4;
    const stock = endCipherStock(slots);
    const sealer = createSealer({ keys: parseSealKeys(generateSealKey()), activeKeyId: 'k1', ...stock });
    await afterRestock();
    const before = { ...made };
    const sealed: string[] = [];
    // Ends in one turn down to the restock's threshold: none made, none due yet.
    for (let end = 0; end < (stock.ready - stock.restockBelow) / 2; end++)
      sealed.push(sealer.seal(`{"value":-1}`), sealer.seal('text'));
    await afterRestock();
    expect(made.all - before.all).toBe(0);
    // Each slot's end comes in the turn after the one before: the first makes a restock due, and
    // the sealer's restock takes two hops of the check phase, so the rest come before it runs.
    for (let end = 0; end < slots; end++) {
      sealed.push(sealer.seal(`{"value":${end}}`), sealer.seal(`text ${end}`));
      await nextTurn();
    }
    expect(made.onSpot - before.onSpot).toBe(0);
    // The used ones made again after the turn, all at once (the ends after that restock use the
    // stock it left): a batch's worth at least, never more than were used.
    await afterRestock();
    expect(made.all - before.all).toBeGreaterThanOrEqual(stock.ready - stock.restockBelow);
    expect(made.all - before.all).toBeLessThanOrEqual(sealed.length);
    // Every seal under an IV of its own, and each opens to what was sealed.
    expect(new Set(sealed.map((s) => s.split('.')[2])).size).toBe(sealed.length);
    expect(sealer.open(sealed.at(-2)!)).toBe('{"value":3}');
    expect(sealer.open(sealed.at(-1)!)).toBe('text 3');
  });

  it('one end a turn: the used ciphers are made again in batches, not two right after each end', async () => {
    const sealer = createSealer({
      keys: parseSealKeys(generateSealKey()),
      activeKeyId: 'k1',
      ...endCipherStock(1),
    });
    await afterRestock();
    const before = { ...made };
    const batches: number[] = [];
    const ends = 60;
    for (let end = 0; end < ends; end++) {
      sealer.seal(`{"value":${end}}`);
      sealer.seal(`text ${end}`);
      const was = made.all;
      await afterRestock();
      if (made.all > was) batches.push(made.all - was);
    }
    expect(made.onSpot - before.onSpot).toBe(0);
    // As many made as used (bar those still to be made), at least a batch's worth at a time.
    expect(batches.length).toBeLessThanOrEqual(Math.ceil((2 * ends) / END_CIPHERS_BATCH));
    for (const b of batches) expect(b).toBeGreaterThanOrEqual(END_CIPHERS_BATCH);
    expect(made.all - before.all).toBeGreaterThan(2 * ends - END_CIPHERS_BATCH - 2);
  });

  it('two a slot, at least one slot, left when a restock is due; a batch more kept', () => {
    expect(endCipherStock(4)).toEqual({ ready: 8 + END_CIPHERS_BATCH, restockBelow: 8 });
    expect(endCipherStock(1)).toEqual({ ready: 2 + END_CIPHERS_BATCH, restockBelow: 2 });
    expect(endCipherStock(0)).toEqual({ ready: 2 + END_CIPHERS_BATCH, restockBelow: 2 });
  });
});
