/**
 * The fair-share row's windows (fair-row.ts), with stand-in runs instead of a cluster: the sides
 * come in ABBA then BAAB order; a window counts only runs that began after the side before it was
 * left (no run of that side, or its counters, reaches it), so a lone window sees none of the
 * second tenant's deferrals; its count is the runs that ended inside it; a failed run ends the row.
 * Runs with the ratio guard (vitest.guard.config.ts).
 */
import { describe, expect, it } from 'vitest';
import { fairRow, type Side } from './fair-row.ts';
import type { PoolSamples } from './pool-sampler.ts';

/** A run that takes `ms` and notes when it began and ended; `then` runs at its end. */
function standIn(ms: number, ran: { start: number; end: number }[], then = () => {}) {
  return async () => {
    const start = performance.now();
    await new Promise((r) => setTimeout(r, ms));
    then();
    ran.push({ start, end: performance.now() });
  };
}

function sampler() {
  const tags: (Side | undefined)[] = [];
  return {
    tags,
    tag: (side: Side | undefined) => void tags.push(side),
    stop: async () => new Map<string, PoolSamples>(),
  };
}

describe('fair-share row', () => {
  it("counts a side's runs only from when every client runs it to the window's end", async () => {
    const ran: { start: number; end: number }[] = [];
    let deferrals = 0;
    const s = sampler();
    const row = await fairRow({
      lone: standIn(2, ran),
      // Only the second tenant's runs are deferred here: a lone window that counted a run (or a
      // counter read) of the two-tenant side before it would read deferrals above 0.
      other: standIn(5, ran, () => deferrals++),
      clients: 6,
      segmentsPerSide: 4,
      segmentSeconds: 0.08,
      deferrals: async () => deferrals,
      cpu: () => ({ total: 0 }),
      sampler: s,
      sampleMs: 10,
    });
    expect(row.windows.map((w) => w.side)).toEqual([
      'lone',
      'two',
      'two',
      'lone',
      'two',
      'lone',
      'lone',
      'two',
    ]);
    expect(s.tags).toEqual(row.windows.flatMap((w) => [w.side, undefined]));
    expect(row.cycles).toHaveLength(2);
    expect(row.lone.deferralsPerRun).toBe(0);
    expect(row.two.deferralsPerRun).toBeGreaterThan(0);
    for (const [i, w] of row.windows.entries()) {
      const inside = ran.filter((r) => r.end >= w.openAt && r.end <= w.closeAt);
      expect(w.runs).toBeGreaterThan(0);
      // Its count is the runs that ended inside it (± the one whose end and count straddle the open).
      expect(Math.abs(w.runs - inside.length)).toBeLessThanOrEqual(1);
      // None of them began before the window before it closed: the side before is not in it.
      const before = row.windows[i - 1];
      if (before) expect(inside.filter((r) => r.start < before.closeAt)).toEqual([]);
    }
    expect(row.lone.runs).toBe(row.windows.filter((w) => w.side === 'lone').reduce((n, w) => n + w.runs, 0));
  });

  it('ends at a failed run instead of waiting for a window that cannot open', async () => {
    let calls = 0;
    const row = fairRow({
      lone: standIn(1, []),
      other: async () => {
        if (++calls > 3) throw new Error('run ended Failed');
      },
      clients: 4,
      segmentsPerSide: 2,
      segmentSeconds: 0.05,
      deferrals: async () => 0,
      cpu: () => ({}),
      sampler: sampler(),
      sampleMs: 10,
    });
    await expect(row).rejects.toThrow('run ended Failed');
  });
});
