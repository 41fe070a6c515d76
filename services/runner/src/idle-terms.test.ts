/**
 * A worker's registration terms written as `JSON.stringify` writes them (the submit's script reads
 * them, whichever release wrote them), their fixed text made once across registrations.
 */
import { describe, expect, it } from 'vitest';
import { type IdleTermsInput, IdleTermsWriter } from './handoff-store.ts';

const stringified = (t: IdleTermsInput) => JSON.stringify({ ...t, startArgs: t.startArgs.map(String) });

describe('registration terms', () => {
  const base: IdleTermsInput = {
    keys: ['bull:q:wait', 'bull:q:active', 'quote"d\\key', 'ünïcode'],
    prefix: 'bull',
    token: 'w1:h:0',
    lockDuration: 30_000,
    name: '',
    startArgs: ['pool:slots', 3, 0.5, 'tenant:\u0000:leases', 1796420704409.9],
    handOff: 'bull:q:handoff:w1',
  };

  it('are the same text as JSON.stringify, token and time spliced in; the fixed text made once', () => {
    const writer = new IdleTermsWriter();
    for (let i = 0; i < 5; i++) {
      const t = {
        ...base,
        token: `w1:h:${i}`,
        startArgs: [...base.startArgs.slice(0, -1), 1796420704409 + i],
      };
      expect(writer.write(t)).toBe(stringified(t));
    }
    expect(writer.builds).toBe(1);
  });

  it('are made again when a fixed term changes', () => {
    const writer = new IdleTermsWriter();
    writer.write(base);
    const changed = [
      { ...base, startArgs: ['pool:slots', 4, 0.5, 'tenant:\u0000:leases', 1] },
      { ...base, lockDuration: 60_000 },
      { ...base, name: 'runner-a' },
      { ...base, keys: [...base.keys.slice(0, -1), 'other'] },
      { ...base, handOff: 'other' },
      { ...base, prefix: 'other' },
      { ...base, startArgs: [7] },
      { ...base, startArgs: [] },
    ];
    for (const t of changed) expect(writer.write(t)).toBe(stringified(t));
    expect(writer.builds).toBe(1 + changed.length);
  });
});
