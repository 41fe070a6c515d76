/**
 * The gateway's sealer stock on a submit's path, through the app's inject on real Redis (no
 * runner): each submit seals its program, description and request with ciphers made beforehand,
 * and those are made again in batches every few submits, not three right behind each submit.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { auth, onAppFixture, run } from '../test/app-fixture.ts';

// Every cipher goes through createCipheriv: counted by where it was made (a sealer's restock, or
// the seal itself, on its caller's path) and by batch (calls in one synchronous stretch).
const made = vi.hoisted(() => ({ atSeal: 0, restocked: 0, batches: [] as number[], inBatch: false }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    createCipheriv: (...args: Parameters<typeof real.createCipheriv>) => {
      if (!(new Error().stack ?? '').includes('at restock')) made.atSeal++;
      else {
        made.restocked++;
        if (!made.inBatch) {
          made.inBatch = true;
          made.batches.push(0);
          queueMicrotask(() => {
            made.inBatch = false;
          });
        }
        made.batches[made.batches.length - 1]!++;
      }
      return real.createCipheriv(...args);
    },
  };
});

const { app, key } = await onAppFixture();

/** Past the next turn's check phase, where a sealer's restock runs. */
const nextTurn = async () => {
  await turn();
  await turn();
};

describe("the gateway sealer's stock", () => {
  it('seals sixteen submits with ciphers made beforehand, made again in one or two batches', async () => {
    const headers = auth(key);
    // A first submit: whatever the set-up used is made again after it.
    expect((await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: run() })).statusCode).toBe(
      202,
    );
    await nextTurn();
    Object.assign(made, { atSeal: 0, restocked: 0, batches: [] });
    for (let i = 0; i < 16; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers,
        payload: run({ callId: `c${i}` }),
      });
      expect(res.statusCode).toBe(202);
      await nextTurn();
    }
    // No submit made a cipher at its seals: program, description and request found theirs made.
    expect(made.atSeal).toBe(0);
    // 48 seals (three a submit); the ciphers they used were made again in batches of 24 or more,
    // not three after each submit (sixteen batches of three).
    expect(made.batches.length).toBeGreaterThan(0);
    expect(made.batches.length).toBeLessThanOrEqual(2);
    for (const size of made.batches) expect(size).toBeGreaterThanOrEqual(24);
  });
});
