import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { endCiphersReady } from './end-ciphers.ts';

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

describe("the runner's ciphers made ahead for its ends", () => {
  it("four slots' ends in consecutive turns, before the sealer restocks, seal with ciphers made ahead", async () => {
    const slots = 4;
    const sealer = createSealer({
      keys: parseSealKeys(generateSealKey()),
      activeKeyId: 'k1',
      ready: endCiphersReady(slots),
    });
    await nextTurn();
    await nextTurn();
    const before = { ...made };
    const sealed: string[] = [];
    // Each slot's end (its result and its text) comes in the turn after the one before: the
    // sealer's restock takes two hops of the check phase, so it has not run between them.
    for (let end = 0; end < slots; end++) {
      sealed.push(sealer.seal(`{"value":${end}}`), sealer.seal(`text ${end}`));
      await nextTurn();
    }
    expect(made.onSpot - before.onSpot).toBe(0);
    // As many made as used, after the ends: the count is not raised, only moved off their path.
    await nextTurn();
    await nextTurn();
    expect(made.all - before.all).toBe(2 * slots);
    // Every seal under an IV of its own, and each opens to what was sealed.
    expect(new Set(sealed.map((s) => s.split('.')[2])).size).toBe(2 * slots);
    expect(sealer.open(sealed[6]!)).toBe('{"value":3}');
    expect(sealer.open(sealed[7]!)).toBe('text 3');
  });

  it('two a slot, at least one slot', () => {
    expect(endCiphersReady(4)).toBe(8);
    expect(endCiphersReady(1)).toBe(2);
    expect(endCiphersReady(0)).toBe(2);
  });
});
