/**
 * A run given no seed gets a fresh one: 16 CSPRNG bytes as 32 hex digits, drawn from a pool filled
 * a page (256 seeds) at a time, never the same bytes twice, also across a refill.
 */
import { describe, expect, it } from 'vitest';
import { randomSeed } from './run-request.ts';

describe('a run without a seed', () => {
  it('gets 32 hex digits, a different seed each time across pool refills', () => {
    const seeds = Array.from({ length: 700 }, () => randomSeed());
    for (const s of seeds) expect(s).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(seeds).size).toBe(seeds.length);
  });
});
