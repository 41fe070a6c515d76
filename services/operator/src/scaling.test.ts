import { describe, expect, it } from 'vitest';
import { type Recommendation, recommendReplicas, shareOf, stabilize, totalDepth } from './scaling.ts';

const limits = { minReplicas: 1, maxReplicas: 10, targetWaitingPerReplica: 4 };
const depth = (waiting: number, prioritized = 0, active = 0, paused = 0, delayed = 0) => ({
  waiting,
  prioritized,
  active,
  delayed,
  paused,
});

describe('recommendReplicas', () => {
  it('counts waiting + prioritized + active runs: work a runner can do', () => {
    expect(totalDepth(depth(1, 2, 3, 4))).toBe(6);
    expect(recommendReplicas(depth(1, 2, 3, 4), limits)).toBe(2); // ceil(6 / 4)
  });
  it('rounds up: one run more than a replica carries needs another replica', () => {
    expect(recommendReplicas(depth(4), limits)).toBe(1);
    expect(recommendReplicas(depth(5), limits)).toBe(2);
  });
  it('clamps to min and max', () => {
    expect(recommendReplicas(depth(0), limits)).toBe(1);
    expect(recommendReplicas(depth(0), { ...limits, minReplicas: 0 })).toBe(0);
    expect(recommendReplicas(depth(1000), limits)).toBe(10);
  });
  it('delayed jobs (fair-share deferrals, hand-backs, retries) are demand: they run when a slot frees', () => {
    expect(totalDepth(depth(0, 0, 0, 0, 12))).toBe(12);
    expect(recommendReplicas(depth(0, 0, 4, 0, 12), limits)).toBe(4); // ceil(16 / 4)
    expect(totalDepth(shareOf(depth(0, 0, 0, 0, 7), 2))).toBe(4);
  });
  it('runs waiting for a human decision are not demand: 40 of them hold no idle replicas', () => {
    expect(recommendReplicas(depth(0, 0, 0, 40), limits)).toBe(1); // minReplicas only
    expect(recommendReplicas(depth(0, 0, 0, 40), { ...limits, minReplicas: 0 })).toBe(0);
  });
  it('two pools of one mode split the depth instead of each taking all of it', () => {
    expect(recommendReplicas(shareOf(depth(40), 2), limits)).toBe(5); // not 10 each
    expect(recommendReplicas(shareOf(depth(40), 1), limits)).toBe(10);
    expect(totalDepth(shareOf(depth(3, 1, 1), 2))).toBe(4); // rounded up, never lost
    expect(shareOf(depth(7), 0)).toEqual(depth(7)); // no peers listed: the whole queue
  });
});

describe('stabilize', () => {
  const windows = { upWindowMs: 0, downWindowMs: 60_000 };
  it('scales up at once with a zero scale-up window', () => {
    const r = stabilize({ current: 1, recommended: 5, history: [], nowMs: 1000, ...windows });
    expect(r.desired).toBe(5);
  });
  it('holds replicas during the scale-down window while any recent recommendation was higher', () => {
    let history: Recommendation[] = [];
    let current = 1;
    const step = (nowMs: number, recommended: number) => {
      const r = stabilize({ current, recommended, history, nowMs, ...windows });
      history = r.history;
      current = r.desired;
      return current;
    };
    expect(step(0, 6)).toBe(6);
    expect(step(10_000, 2)).toBe(6); // lull: held
    expect(step(50_000, 1)).toBe(6); // still within 60 s of the 6
    expect(step(61_000, 1)).toBe(2); // the 6 left the window; the 2 (at 10 s) is the highest left
    expect(step(71_000, 1)).toBe(1);
  });
  it('a scale-up window requires the higher recommendation to persist', () => {
    let history: Recommendation[] = [];
    let current = 2;
    const step = (nowMs: number, recommended: number) => {
      const r = stabilize({ current, recommended, history, nowMs, upWindowMs: 30_000, downWindowMs: 0 });
      history = r.history;
      current = r.desired;
      return current;
    };
    expect(step(0, 2)).toBe(2);
    expect(step(5_000, 8)).toBe(2); // the 2 at t=0 is still in the window: spike not trusted yet
    expect(step(31_000, 8)).toBe(8); // 8 has persisted for the whole window
  });
  it('prunes history older than the longest window', () => {
    const old = [{ atMs: 0, replicas: 9 }];
    const r = stabilize({ current: 9, recommended: 1, history: old, nowMs: 120_000, ...windows });
    expect(r.history).toEqual([{ atMs: 120_000, replicas: 1 }]);
    expect(r.desired).toBe(1);
  });
});
