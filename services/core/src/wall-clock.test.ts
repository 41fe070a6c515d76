import { describe, expect, it } from 'vitest';
import { wallClockReads, wallNow } from './wall-clock.ts';

describe('wallNow', () => {
  it("stamps on the wall clock, not on a process's `performance.timeOrigin` read off at its start", () => {
    // A process preempted between Node's two reads of its origin keeps the gap for life (40 ms seen
    // at load 10): stand in for one by moving this process's origin 30 ms.
    const real = performance.timeOrigin;
    Object.defineProperty(performance, 'timeOrigin', { value: real - 30, configurable: true });
    try {
      // Each stamp bracketed by two reads of Date.now(), which floors the same clock: every stamp
      // within [the first's ms, the second's ms + 1), a read's µs aside (a preemption widens the
      // bracket, never fails it). With the origin's 30 ms, every one would be outside.
      const stamps: Array<readonly [number, number, number]> = [];
      for (let i = 0; i < 2000; i++) {
        const lo = Date.now();
        const stamp = wallNow();
        stamps.push([lo, stamp, Date.now()]);
      }
      const outside = stamps.filter(([lo, t, hi]) => t < lo - 0.5 || t >= hi + 1.5);
      expect(outside).toEqual([]);
      expect(stamps.some(([, t]) => !Number.isInteger(t))).toBe(true);
    } finally {
      Object.defineProperty(performance, 'timeOrigin', { value: real, configurable: true });
    }
  });

  it('reads its offset once, and again only after a step of the wall clock', () => {
    wallNow();
    const before = wallClockReads.anchors;
    for (let i = 0; i < 1000; i++) wallNow();
    expect(wallClockReads.anchors - before).toBeLessThanOrEqual(1);
    const realNow = Date.now;
    Date.now = () => realNow() + 50;
    try {
      // Bracketed by two reads of the stepped clock: a preemption around the stamp widens the
      // bracket, never fails it.
      const lo = Date.now();
      const stamp = wallNow();
      const hi = Date.now();
      expect(wallClockReads.anchors).toBeGreaterThan(before);
      expect(stamp).toBeGreaterThanOrEqual(lo - 1);
      expect(stamp).toBeLessThan(hi + 2);
    } finally {
      Date.now = realNow;
    }
    wallNow();
  });

  it('does not read its offset again for a stamp descheduled between its two reads', () => {
    wallNow();
    const before = wallClockReads.anchors;
    const realNow = Date.now;
    // The process stands still for 3 ms between the stamp's monotonic read and its Date.now().
    Date.now = () => {
      const t = performance.now();
      while (performance.now() - t < 3) {}
      return realNow();
    };
    try {
      wallNow();
    } finally {
      Date.now = realNow;
    }
    expect(wallClockReads.anchors).toBe(before);
  });
});
