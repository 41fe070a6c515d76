import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.ts';

describe('Backoff', () => {
  it('doubles from the initial delay up to the cap, and resets', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0 });
    expect([b.next(), b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    b.reset();
    expect(b.next()).toBe(100);
  });
  it('jitter only shortens the delay, by at most its share', () => {
    const b = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.2 });
    for (let i = 0; i < 50; i++) {
      const d = b.next();
      expect(d).toBeGreaterThanOrEqual(800);
      expect(d).toBeLessThanOrEqual(1000);
    }
  });
});
