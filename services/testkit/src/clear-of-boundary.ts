/**
 * Waits, when the clock is within `marginMs` of the next multiple of `periodMs` (a fixed window's
 * end: a rate limit's minute, a usage day, a bytes bucket), until that boundary has passed, so a
 * short test that counts inside one window is not split across two by when it happened to run
 * (one CI run met midnight mid-test). At most `marginMs`.
 */
export async function clearOfBoundary(periodMs: number, marginMs: number): Promise<void> {
  const left = periodMs - (Date.now() % periodMs);
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 50));
}
