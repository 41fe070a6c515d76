import { afterEach, describe, expect, it, vi } from 'vitest';
import { usageDay } from './run-index-writes.ts';

const DAY_MS = 24 * 3600 * 1000;
const formatted = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('usageDay', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("names each time's UTC day as a formatted date does, back and forth across day boundaries", () => {
    const start = Date.UTC(2026, 11, 3);
    const times = [
      start,
      start - 1,
      start + DAY_MS - 1,
      start + DAY_MS,
      start + 0.5,
      start - 0.5,
      Date.UTC(2024, 1, 29, 23, 59, 59, 999),
      Date.UTC(2024, 2, 1),
      0,
      -1,
      -DAY_MS,
      -DAY_MS - 1,
      start + 12 * 3600 * 1000,
      start,
    ];
    for (const ms of times) expect(usageDay(ms)).toBe(formatted(ms));
    expect(() => usageDay(Number.NaN)).toThrow(RangeError);
  });

  it('formats a date once per day: later times of the same day reuse it', () => {
    const start = Date.UTC(2027, 0, 5);
    usageDay(start + 1000);
    const spy = vi.spyOn(Date.prototype, 'toISOString');
    expect(usageDay(start + 2000)).toBe('2027-01-05');
    expect(usageDay(start + DAY_MS - 1)).toBe('2027-01-05');
    expect(spy).toHaveBeenCalledTimes(0);
    expect(usageDay(start + DAY_MS)).toBe('2027-01-06');
    expect(spy).toHaveBeenCalledTimes(1);
  });
});
