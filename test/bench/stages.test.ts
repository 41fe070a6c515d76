/**
 * The stage table's arithmetic (stages.ts): the top-level stages of a run are consecutive sub-ms
 * stamps, so they add up to its latency; a whole-ms stamp is only read as a mean with its cut
 * corrected; a run missing a stamp leaves the sum, not a gap in it. Runs in `npm test` with the
 * ratio guard (vitest.guard.config.ts).
 */
import { describe, expect, it } from 'vitest';
import { pct } from './baselines.ts';
import { STAGES, stageLines, stageRow, stagesOf } from './stages.ts';

/** A run's stamps (ms since the epoch, sub-ms), as the client, the gateway and the runner take them. */
function run(start: number, fetched = true) {
  const timings = {
    enqueued: start + 0.31,
    ...(fetched ? { fetched: start + 1.52 } : {}),
    pickedUp: start + 1.57,
    engineCalled: start + 1.66,
    engineReturned: start + 2.9,
    hostWaitMs: 0.02,
    endSent: start + 2.98,
  };
  const received = start + 5.4;
  // The gateway's Date.now() at the build, cut down to the ms.
  const createdAt = String(Math.floor(start + 0.2));
  return {
    stages: stageRow(start, received, createdAt, JSON.stringify(timings)),
    latencyMs: received - start,
  };
}

const top = STAGES.map((s, i) => (s.sub ? -1 : i)).filter((i) => i >= 0);

describe('stage table', () => {
  it("a run's top-level stages add up to its latency, none below 0", () => {
    const r = run(1_733_300_000_000.93);
    const sum = top.reduce((s, i) => s + r.stages[i]!, 0);
    expect(sum).toBeCloseTo(r.latencyMs, 6);
    for (const i of top) expect(r.stages[i]).toBeGreaterThanOrEqual(0);
    // The split of the pick-up adds up to it.
    expect(r.stages[3]! + r.stages[4]!).toBeCloseTo(r.stages[2]!, 6);
  });

  it('the sum check holds over runs, the whole-ms split is a mean with its cut corrected, no p50', () => {
    // Starts spread over a ms, so the cut of createdAt is spread as in a real run.
    const rows = Array.from({ length: 100 }, (_, k) => run(1_733_300_000_000 + k * 7.01));
    const summary = stagesOf(rows);
    expect(summary.runs).toBe(100);
    expect(summary.sumOfMeansMs).toBeCloseTo(summary.totalMeanMs, 6);
    expect(summary.negativeRuns).toBe(0);
    const built = summary.stages[1]!;
    expect(built.wholeMs).toBe(true);
    expect(built.p50Ms).toBeNaN();
    // send → run built is 0.2 ms in every run; the corrected mean of the cut stamps is within 0.1.
    expect(Math.abs(built.meanMs - 0.2)).toBeLessThan(0.1);
    expect(summary.stages.find((s) => s.name.startsWith('end sent →'))!.p50Ms).toBeCloseTo(2.42, 3);
    expect(summary.stages.find((s) => s.name.startsWith('engine returned →'))!.p50Ms).toBeCloseTo(0.08, 3);
  });

  it('a run without a stamp a split needs (an older runner) still counts in the sum; without a top-level one it is left out', () => {
    const noFetch = run(1_733_300_000_000.5, false);
    const noEnd = run(1_733_300_000_010.5);
    noEnd.stages[top.at(-1)!] = Number.NaN;
    const summary = stagesOf([run(1_733_300_000_020.5), noFetch, noEnd]);
    expect(summary.runs).toBe(2);
    expect(summary.sumOfMeansMs).toBeCloseTo(summary.totalMeanMs, 6);
    expect(summary.stages[3]!.runs).toBe(2);
    expect(stageLines(summary).at(-1)).toContain(summary.totalMeanMs.toFixed(2));
  });

  it("the end's stage to the response's first bytes is a split of it, outside the sum; NaN when not stamped", () => {
    const r = run(1_733_300_000_000.5);
    const sent = 1_733_300_000_000.5;
    const stamped = stageRow(sent, sent + 5.4, null, JSON.stringify({ endSent: sent + 2.98 }), sent + 5.25);
    const bytes = STAGES.findIndex((s) => s.name.trim().startsWith('of which end sent →'));
    expect(STAGES[bytes]!.sub).toBe(true);
    expect(stamped[bytes]).toBeCloseTo(2.27, 3);
    // The whole stage is still to the parsed answer (rounds ≤ 34's reading).
    expect(stamped[top.at(-1)!]).toBeCloseTo(2.42, 3);
    expect(r.stages[bytes]).toBeNaN();
    const summary = stagesOf([{ stages: stamped, latencyMs: 5.4 }, r]);
    expect(summary.stages[bytes]!.runs).toBe(1);
    expect(summary.stages[bytes]!.p50Ms).toBeCloseTo(2.27, 3);
    expect(summary.runs).toBe(1);
  });

  it("the request's write at the client is a split of send → enqueue, outside the sum, listed last; NaN when not stamped", () => {
    const sent = 1_733_300_000_000.5;
    const row = stageRow(
      sent,
      sent + 5.4,
      null,
      JSON.stringify({ enqueued: sent + 0.4 }),
      Number.NaN,
      sent + 0.06,
    );
    const written = STAGES.findIndex((s) => s.name.includes("the request's write at the client's socket"));
    expect(written).toBe(STAGES.length - 1);
    expect(STAGES[written]!.sub).toBe(true);
    expect(row[written]).toBeCloseTo(0.06, 3);
    expect(row[0]).toBeCloseTo(0.4, 3);
    expect(run(sent).stages[written]).toBeNaN();
  });

  it('a stage below 0 (two processes out of step) is counted and named in the table', () => {
    const r = run(1_733_300_000_000.5);
    r.stages[2]! -= 3;
    r.stages[0]! += 3;
    const summary = stagesOf([r, run(1_733_300_000_001.5)]);
    expect(summary.negativeRuns).toBe(1);
    expect(stageLines(summary).join('\n')).toContain('1 of 2 runs have a stage below 0 ms');
  });

  it('pct is the nearest rank: p50 of 1..4 is 3, p99 of fewer than 100 samples is the largest', () => {
    expect(pct([4, 1, 3, 2], 50)).toBe(3);
    expect(pct([5, 1, 9], 99)).toBe(9);
    expect(pct([], 50)).toBeNaN();
  });
});
