/**
 * When a host leaves service after a run: at once after a failure; once due (past its resident
 * growth bound, or at its run bound), when its own replacement is ready (engine.ts), within bounds.
 */
import type { HostProcess } from './host-process.ts';

/**
 * A due host serves on until its own replacement is ready, at most this many runs (and a quarter of
 * its run bound) past the run it came due, and this much resident growth past its size then.
 */
const MAX_OVERSHOOT_RUNS = 256;
const MAX_OVERSHOOT_RESIDENT_BYTES = 2 * 1024 * 1024;
const RESIDENT_CHECK_EVERY_RUNS = 16;

export type RetirementReason = 'crashed' | 'killed' | 'max-runs' | 'max-memory';

export interface RetirementBounds {
  maxRunsPerProcess: number;
  /** Resident growth since its first run, bytes (0: not checked). */
  maxGrowth: number;
  /** Replacements start ahead (EngineOptions.prewarm): without them, a due host goes at once. */
  prewarm: boolean;
}

/**
 * The host's private memory growth since its first run, read at this release (`host.runs` already
 * counts the run), or 0 when not read: after the first run (the baseline) and every 16th only —
 * the /proc read costs the runner's CPU on a run's path, and a host grows a few KiB per run, so 16
 * runs pass the bound by a few hundred KiB at most.
 */
export function growthAtRelease(
  host: HostProcess,
  reusable: boolean,
  maxGrowth: number,
  readResident: ((pid: number) => number | undefined) | undefined,
): number {
  const checked =
    maxGrowth > 0 && reusable && (host.runs === 1 || host.runs % RESIDENT_CHECK_EVERY_RUNS === 0);
  // Private memory (RssAnon + RssShmem), not VmRSS: the node binary's code pages a host maps in
  // once its own JavaScript gets optimized are file-backed and shared, not a leak (host-process.ts).
  const resident = checked ? host.privateBytes(readResident) : undefined;
  if (host.runs === 1 && resident !== undefined) host.baselineResidentBytes = resident;
  return resident !== undefined && host.baselineResidentBytes !== undefined
    ? resident - host.baselineResidentBytes
    : 0;
}

export function isDue(host: HostProcess, bounds: RetirementBounds): boolean {
  return host.overBoundAtRun !== undefined || host.runs >= bounds.maxRunsPerProcess;
}

/**
 * Why the host goes after the run just released (`grown`: its growth read at this release, 0 when
 * not read), or undefined: it serves on. Marks the run at which it first passed its growth bound.
 */
export function retirementOf(
  host: HostProcess,
  run: { reusable: boolean; crashed: boolean; grown: number },
  bounds: RetirementBounds,
): RetirementReason | undefined {
  // `crashed`: the host died under a run (a platform fault to page on); `killed`: the run left it
  // unusable (the watchdog ended a runaway program, an abort or stop ended one in its first turn,
  // it passed its resident bound: the tenant's doing, not ours).
  if (run.crashed) return 'crashed';
  if (!run.reusable || host.exited) return 'killed';
  const { maxGrowth, maxRunsPerProcess } = bounds;
  if (run.grown > maxGrowth && host.overBoundAtRun === undefined) {
    host.overBoundAtRun = host.runs;
    host.overBoundGrowth = run.grown;
  }
  if (!isDue(host, bounds)) return undefined;
  // Retired at once, the next run waited for a whole host start (150-1500 ms on a loaded machine:
  // the slowest runs at one client and at 16, sequential.ts TAIL=1). Bounded: growth comes in steps
  // (a check found hosts 5-8 MiB grown when the bound was 5 MiB), so 2 MiB more than then, and none
  // for a host found past twice its bound (a leak, not a step).
  const dueAt = Math.min(host.overBoundAtRun ?? Number.POSITIVE_INFINITY, maxRunsPerProcess);
  const overshootRuns = Math.min(MAX_OVERSHOOT_RUNS, Math.floor(maxRunsPerProcess / 4));
  const spent =
    (host.replacementHost !== undefined && !host.replacementHost.exited) ||
    !bounds.prewarm ||
    host.replacementFailed ||
    host.runs - dueAt >= overshootRuns ||
    (host.overBoundAtRun !== undefined &&
      (host.overBoundGrowth > 2 * maxGrowth ||
        run.grown > host.overBoundGrowth + MAX_OVERSHOOT_RESIDENT_BYTES));
  if (!spent) return undefined;
  return host.overBoundAtRun !== undefined ? 'max-memory' : 'max-runs';
}
