/**
 * Replica math, kept pure so it is unit-tested without a cluster. The stabilization follows the
 * HorizontalPodAutoscaler's behaviour: every reconcile records a recommendation; going up uses the
 * LOWEST recommendation of the scale-up window, going down the HIGHEST of the scale-down window,
 * so a short spike or a short lull does not move replicas back and forth.
 */

export interface QueueDepth {
  waiting: number;
  prioritized: number;
  active: number;
  /**
   * BullMQ's delayed set of a run queue. Nothing submits runs with a delay, so what sits there is
   * work a runner will take within seconds: jobs over their tenant's fair share sent back until a
   * slot of that tenant frees (ISLET_TENANT_SHARE_RECHECK_MS at the latest, services/runner
   * fair-share.ts), runs handed back by a draining runner (due in 50 ms) and retries in their
   * backoff (500 ms). Counted as demand: a deferred job runs as soon as a slot frees, and more
   * replicas raise its tenant's limit (a share of the pool's live slots), so leaving them out
   * would keep a pool at minReplicas while one tenant's flood waits in the delayed set. Runs
   * paused for a decision are not here: their job ends and a new one is queued on resume.
   */
  delayed: number;
  /**
   * Runs paused for a human decision: reported, but not demand. They hold no runner while they
   * wait (40 waiting decisions must not hold 10 idle replicas); when resumed they re-enter the
   * queue as waiting and count then.
   */
  paused: number;
}

/** Work a runner can do: waiting, prioritized, active and delayed (deferred, handed-back) runs. */
export function totalDepth(d: QueueDepth): number {
  return d.waiting + d.prioritized + d.active + d.delayed;
}

/**
 * The share of one of `pools` RunnerPools serving the same mode (they pull from one queue): each
 * takes 1/n of the depth, rounded up, instead of each scaling for all of it.
 */
export function shareOf(d: QueueDepth, pools: number): QueueDepth {
  const n = Math.max(1, pools);
  return {
    waiting: Math.ceil(d.waiting / n),
    prioritized: Math.ceil(d.prioritized / n),
    active: Math.ceil(d.active / n),
    delayed: Math.ceil(d.delayed / n),
    paused: Math.ceil(d.paused / n),
  };
}

interface ScaleLimits {
  minReplicas: number;
  maxReplicas: number;
  targetWaitingPerReplica: number;
}

/** ceil(depth / target), clamped to [min, max]. */
export function recommendReplicas(depth: QueueDepth, limits: ScaleLimits): number {
  const raw = Math.ceil(totalDepth(depth) / Math.max(1, limits.targetWaitingPerReplica));
  return Math.min(limits.maxReplicas, Math.max(limits.minReplicas, raw));
}

export interface Recommendation {
  atMs: number;
  replicas: number;
}

interface StabilizeInput {
  current: number;
  recommended: number;
  history: readonly Recommendation[];
  nowMs: number;
  upWindowMs: number;
  downWindowMs: number;
}

interface StabilizeResult {
  desired: number;
  /** History to keep for the next call (this recommendation appended, old ones pruned). */
  history: Recommendation[];
}

export function stabilize(input: StabilizeInput): StabilizeResult {
  const { current, recommended, nowMs, upWindowMs, downWindowMs } = input;
  const keepMs = Math.max(upWindowMs, downWindowMs);
  const history = [
    ...input.history.filter((r) => nowMs - r.atMs <= keepMs),
    { atMs: nowMs, replicas: recommended },
  ];
  const within = (windowMs: number, future: boolean) =>
    history.filter((r) => nowMs - r.atMs <= windowMs && (future || r.atMs <= nowMs)).map((r) => r.replicas);
  // Entries dated in the future come from a persisted history (times rounded up): they may only
  // delay a scale-down, never a scale-up.
  const upBound = Math.min(...within(upWindowMs, false));
  const downBound = Math.max(...within(downWindowMs, true));
  let desired = current;
  if (desired < upBound) desired = upBound;
  if (desired > downBound) desired = downBound;
  return { desired, history };
}

/**
 * Persisted times are pushed this far into the future, so a reader of a copy written just before a
 * run ended waits longer, never shorter.
 */
const HISTORY_GRANULARITY_MS = 15_000;

/** Keeps the latest entry of each run of equal consecutive recommendations: same min/max in any window. */
function compactHistory(history: readonly Recommendation[]): Recommendation[] {
  const out: Recommendation[] = [];
  for (const r of history) {
    const last = out[out.length - 1];
    if (last && last.replicas === r.replicas)
      out[out.length - 1] = { atMs: Math.max(last.atMs, r.atMs), replicas: r.replicas };
    else out.push({ ...r });
  }
  return out;
}

/**
 * The history to persist: the previous persisted copy while it still covers the live history
 * (same runs, each persisted time at or after the live one), else the live history compacted
 * with times rounded up by HISTORY_GRANULARITY_MS.
 */
export function persistableHistory(
  persisted: readonly Recommendation[],
  live: readonly Recommendation[],
): Recommendation[] {
  const c = compactHistory(live);
  // The latest run's time is not refreshed while it holds: a successor takes it to have lasted
  // until it took over (takeOverHistory), so only finished runs need their end time written.
  const covers =
    persisted.length === c.length &&
    c.every(
      (r, i) =>
        persisted[i]?.replicas === r.replicas && (i === c.length - 1 || (persisted[i]?.atMs ?? 0) >= r.atMs),
    );
  if (covers) return [...persisted];
  return c.map((r) => ({ atMs: r.atMs + HISTORY_GRANULARITY_MS, replicas: r.replicas }));
}
