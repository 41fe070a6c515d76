import { setImmediate as turn } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';

// Every cipher a sealer makes goes through createCipheriv: counted, and made as Node makes it.
const made = vi.hoisted(() => ({ count: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    createCipheriv: (...args: Parameters<typeof real.createCipheriv>) => {
      made.count++;
      return real.createCipheriv(...args);
    },
  };
});

const { createSealer, parseSealKeys, generateSealKey } = await import('./sealer.ts');

const keys = parseSealKeys(generateSealKey('k1'));

/** Past the next turn's check phase, where the used ciphers are made again. */
const nextTurn = async () => {
  await turn();
  await turn();
};

describe('a sealer with ciphers kept ready', () => {
  afterEach(() => {
    made.count = 0;
  });

  it('seals with ciphers made beforehand, and makes the used ones again after the turn', async () => {
    const s = createSealer({ keys, activeKeyId: 'k1', ready: 2 });
    expect(made.count).toBe(2);
    // A run's end: its result and its text, sealed in one turn, make no cipher.
    const result = s.seal('{"_tag":"Completed","value":42}');
    const text = s.seal('42');
    expect(made.count).toBe(2);
    await nextTurn();
    expect(made.count).toBe(4);
    // More seals in one turn than kept ready: the rest make their own, as without a stock.
    for (let i = 0; i < 3; i++) s.seal(`more ${i}`);
    expect(made.count).toBe(5);
    await nextTurn();
    expect(made.count).toBe(7);
    // The same format, opened by a sealer that keeps nothing ready (another process's).
    const plain = createSealer({ keys, activeKeyId: 'k1' });
    expect(result).toMatch(/^v1\.k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]*$/);
    expect(plain.open(result)).toBe('{"_tag":"Completed","value":42}');
    expect(plain.open(text)).toBe('42');
  });

  it('uses each IV once, the ready ciphers and those made at the seal alike', async () => {
    const s = createSealer({ keys, activeKeyId: 'k1', ready: 2 });
    const plain = createSealer({ keys, activeKeyId: 'k1' });
    const ivs = new Set<string>();
    let seals = 0;
    for (let round = 0; round < 300; round++) {
      // One to four seals a turn: from the stock, then made at the seal.
      for (let i = 0; i <= round % 4; i++) {
        const text = `value ${round}.${i}`;
        const sealed = s.seal(text);
        ivs.add(sealed.split('.')[2] ?? '');
        expect(plain.open(sealed)).toBe(text);
        seals++;
      }
      await turn();
    }
    expect(ivs.size).toBe(seals);
  });

  it('with `restockBelow`, makes the used ciphers again only once the stock is below it, all in one go', async () => {
    const s = createSealer({ keys, activeKeyId: 'k1', ready: 6, restockBelow: 3 });
    expect(made.count).toBe(6);
    // Three seals (one submit's) leave three: none made, now or after the turn.
    for (const text of ['code', 'description', 'request']) s.seal(text);
    await nextTurn();
    expect(made.count).toBe(6);
    // The next seal takes the stock below three: the four used are made after the turn, together.
    s.seal('one more');
    expect(made.count).toBe(6);
    await nextTurn();
    expect(made.count).toBe(10);
    // Past the stock in one turn: the rest are made at their seals, as without one.
    for (let i = 0; i < 8; i++) s.seal(`burst ${i}`);
    expect(made.count).toBe(12);
    await nextTurn();
    expect(made.count).toBe(18);
  });

  it('keeps nothing ready by default: one cipher a seal, made at the seal', async () => {
    const s = createSealer({ keys, activeKeyId: 'k1' });
    expect(made.count).toBe(0);
    s.seal('a');
    s.seal('b');
    expect(made.count).toBe(2);
    await nextTurn();
    expect(made.count).toBe(2);
  });

  it("makes the used ciphers after a write its caller put off to the same turn's check phase", async () => {
    const s = createSealer({ keys, activeKeyId: 'k1', ready: 3 });
    expect(made.count).toBe(3);
    // A binding call's complete: its event and outcome sealed, then its script call queued for
    // the check phase (services/runs turn-batch.ts), in that order.
    s.seal('{"type":"call"}');
    s.seal('{"type":"result","valueJson":"1"}');
    const atTheWrite = await new Promise<number>((resolve) => setImmediate(() => resolve(made.count)));
    expect(atTheWrite).toBe(3);
    // Made in the next turn, while the caller waits for the write's answer.
    await turn();
    expect(made.count).toBe(5);
  });
});
