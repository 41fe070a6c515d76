/**
 * Where a sequential run's time goes, stage by stage, from the client's send and receipt and the
 * timings the runner stores with a run's end (RunTimings in @islet/runs). Every top-level stage is
 * the difference of two sub-ms stamps (core's `wallNow` in the client,
 * the gateway's enqueue stamp, the runner's), consecutive on the run's path, so the top-level
 * stages of a run add up to its latency exactly; `stagesOf` checks it.
 *
 * The record's `createdAt` and `updatedAt` are whole ms (`Date.now()`, cut down): against a sub-ms
 * stamp they read half a ms short on average, and one run's difference is off by up to 1 ms, so a
 * stage from them read negative (round 25: "engine returned → end written -0.42 ms", which was
 * `updatedAt`, stamped in the runner just before the end is sent, against the runner's sub-ms
 * engine return). Neither stamps a moment no sub-ms stamp has (`updatedAt` is the end's send, not
 * its write in Redis), so `createdAt` is kept for one split only, its mean corrected by the half ms,
 * no p50; `updatedAt` is not read.
 */
import { pct } from './baselines.ts';

// The runner stores the stamps read here only when asked (core config, off by default since round
// 43 `format-43`): every cluster a bench starts after importing this module (devstack passes its
// environment on to its processes) stores them.
process.env.ISLET_RUN_STAGE_TIMINGS ??= 'true';

/** The stamps of a record's `timings` in their stored order (services/runs `run-timings.ts`). */
const STAMP_ORDER = [
  'enqueued',
  'fetched',
  'pickedUp',
  'engineCalled',
  'engineReturned',
  'hostWaitMs',
  'endSent',
];

/**
 * A record's `timings` as ms stamps (instants since the epoch, `hostWaitMs` a duration), from either
 * form the runner has stored: rounds ≤ 37's JSON, or round 38's compact µs text (`enqueued`, then the
 * others as offsets from it, comma-separated; services/runs `timingsFrom` reads the same). Kept here,
 * not imported: `ab.sh` runs the head's bench against a base's `services/`, which may not export it.
 */
export function stampsOf(text: string | null | undefined): Partial<Record<string, number>> {
  if (!text) return {};
  if (text.startsWith('{')) return JSON.parse(text) as Partial<Record<string, number>>;
  const parts = text.split(',');
  const base = Number(parts[0] || Number.NaN);
  const out: Partial<Record<string, number>> = { enqueued: base / 1000 };
  for (let i = 1; i < STAMP_ORDER.length && i < parts.length; i++) {
    if (!parts[i]) continue;
    const us = Number(parts[i]);
    out[STAMP_ORDER[i]!] = STAMP_ORDER[i] === 'hostWaitMs' ? us / 1000 : (base + us) / 1000;
  }
  return out;
}

export interface StageDef {
  name: string;
  /** A split of the top-level stage above it, not part of the sum. */
  sub?: boolean;
  /** From a whole-ms stamp: only the mean (corrected by +0.5 ms) is printed. */
  wholeMs?: boolean;
}

export const STAGES: StageDef[] = [
  { name: 'send → enqueue (request, gateway: auth, checks, policy, run built, script sent)' },
  { name: '  of which send → run built (whole-ms createdAt, mean + 0.5 ms)', sub: true, wholeMs: true },
  { name: 'enqueue → runner pick-up (BullMQ add, hand-off or marker wake-up and fetch)' },
  {
    name: '  of which enqueue → processor started (on one server the lease and attempt start in it)',
    sub: true,
  },
  { name: '  of which processor started → pick-up (slot; fair-share acquire on a Cluster)', sub: true },
  { name: 'pick-up → engine called (run, attempt, Running, settings; one server: from the fetch)' },
  { name: 'engine: waiting for a sandbox host' },
  { name: 'engine: isolate ready + program + result back' },
  { name: 'engine returned → end sent (outcome mapped)' },
  { name: 'end sent → end written → waiter woken → response received' },
  {
    name: "  of which end sent → the response's first bytes at the client (before its http client parses them)",
    sub: true,
  },
  // Last, so no stage's index moves (tail-classify.ts, engine-mode.ts read them by index).
  {
    name: "  (send → enqueue's) of which send → the request's write at the client's socket (the bench's http client)",
    sub: true,
  },
];

export interface Stage {
  name: string;
  sub: boolean;
  wholeMs: boolean;
  meanMs: number;
  /** NaN for a whole-ms stage (a p50 of truncated differences is not the stage's p50). */
  p50Ms: number;
  /** Runs the figure is over. */
  runs: number;
}

/**
 * One run's stages (ms, `STAGES`' order) from the client's send and receipt, the record's
 * `createdAt` and its `timings` as stored (NaN where a stamp is missing: an A/B's older base), and
 * when the response's first bytes reached the client's socket (`bytesAt`; NaN: not stamped) and when
 * the request's first write reached it (`writtenAt`; NaN: not stamped).
 */
export function stageRow(
  sent: number,
  received: number,
  createdAt: string | null | undefined,
  timings: string | null | undefined,
  bytesAt = Number.NaN,
  writtenAt = Number.NaN,
): number[] {
  const t = stampsOf(timings);
  const at = (k: string) => t[k] ?? Number.NaN;
  const hostWait = t.hostWaitMs ?? 0;
  return [
    at('enqueued') - sent,
    // Date.now() cut down: the mean of the cut is half a ms (a uniform fraction).
    Number(createdAt ?? Number.NaN) + 0.5 - sent,
    at('pickedUp') - at('enqueued'),
    at('fetched') - at('enqueued'),
    at('pickedUp') - at('fetched'),
    at('engineCalled') - at('pickedUp'),
    hostWait,
    at('engineReturned') - at('engineCalled') - hostWait,
    at('endSent') - at('engineReturned'),
    received - at('endSent'),
    bytesAt - at('endSent'),
    writtenAt - sent,
  ];
}

export interface StageSummary {
  stages: Stage[];
  /** Runs with every top-level stage stamped (the sum and the top-level figures are over these). */
  runs: number;
  /** Mean of the requests' latencies (received - sent) over those runs, ms. */
  totalMeanMs: number;
  totalP50Ms: number;
  /** Sum of the top-level stages' means: equals `totalMeanMs` when the stages leave no gap. */
  sumOfMeansMs: number;
  /** Runs with a top-level stage below 0 (stamps of two processes out of step: a clock step). */
  negativeRuns: number;
}

/**
 * Mean and p50 of each stage over `rows` (`stageRow`'s, with each run's latency beside it). The
 * top-level stages are taken over the runs that have all of them, so their means add up to the
 * mean latency of the same runs.
 */
export function stagesOf(rows: { stages: number[]; latencyMs: number }[]): StageSummary {
  const top = STAGES.map((s, i) => (s.sub ? -1 : i)).filter((i) => i >= 0);
  const whole = rows.filter((r) => top.every((i) => Number.isFinite(r.stages[i])));
  const mean = (xs: number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : Number.NaN);
  const stages = STAGES.map((def, i): Stage => {
    const col = (def.sub ? rows : whole).map((r) => r.stages[i]!).filter((x) => Number.isFinite(x));
    return {
      name: def.name,
      sub: def.sub === true,
      wholeMs: def.wholeMs === true,
      meanMs: mean(col),
      p50Ms: def.wholeMs ? Number.NaN : pct(col, 50),
      runs: col.length,
    };
  });
  const latencies = whole.map((r) => r.latencyMs);
  return {
    stages,
    runs: whole.length,
    totalMeanMs: mean(latencies),
    totalP50Ms: pct(latencies, 50),
    sumOfMeansMs: top.reduce((s, i) => s + stages[i]!.meanMs, 0),
    negativeRuns: whole.filter((r) => top.some((i) => r.stages[i]! < 0)).length,
  };
}

/** The stage table as the benches print it: each stage's mean and p50, then the sum check. */
export function stageLines(summary: StageSummary): string[] {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '—');
  const lines = summary.stages.map(
    (s) => `  ${s.name.padEnd(92)}${f(s.meanMs).padStart(8)}${f(s.p50Ms).padStart(9)}`,
  );
  const total = `total: send → response received (the top-level means add up to ${f(summary.sumOfMeansMs)})`;
  lines.push(
    `  ${total.padEnd(92)}${f(summary.totalMeanMs).padStart(8)}${f(summary.totalP50Ms).padStart(9)}`,
  );
  if (summary.negativeRuns > 0)
    lines.push(
      `  note: ${summary.negativeRuns} of ${summary.runs} runs have a stage below 0 ms: stamps of two processes out of step`,
    );
  return lines;
}

/** This process's monotonic clock on the epoch's scale (a step of the wall clock shows against it). */
const monotonic = () => performance.timeOrigin + performance.now();

/**
 * Watches the wall clock against this process's monotonic one; the returned function gives how far
 * it moved since, ms. Stage stamps come from several processes (core's `wallNow`: each process's
 * offset from its monotonic clock, read again past a 1.5 ms step), so a step of the clock (an NTP
 * correction, a VM's resume) while a bench runs may shift one process's stamps against another's
 * until each reads it; the benches print a warning past 1 ms.
 */
export function clockWatch(): () => number {
  const offset = () => Date.now() - monotonic();
  const start = offset();
  return () => offset() - start;
}

/** The warning the benches print when `clockWatch` saw the wall clock move past 1 ms. */
export function clockStepNote(stepMs: number): string | undefined {
  if (Math.abs(stepMs) <= 1) return undefined;
  return (
    `note: the wall clock moved ${stepMs.toFixed(1)} ms against the monotonic clock during this bench; ` +
    'stage figures (stamps from several processes) are not to be read'
  );
}
