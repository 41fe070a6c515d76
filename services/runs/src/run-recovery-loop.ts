/**
 * The one recovery loop. Each tick it takes the runs due for a look from its feeds (decisions that
 * expired unanswered, paused runs whose decisions may all be answered, the tenants' in-flight
 * index, jobs BullMQ failed for good), reads what Redis says of each run through the stores,
 * asks `reconcileRun` (the recovery matrix) what to do, and hands each action to the caller's
 * capabilities — which change a status only through run-lifecycle.
 *
 * Level-triggered and idempotent, like the matrix: a run looked at twice, by one process or by
 * several at once, gets the same actions, and applying them twice is harmless. Gateways and
 * runners drive this same loop with different feeds and capabilities (a runner alone holds the
 * worker whose failed jobs it ends; a gateway queues and resumes runs); the rules are the matrix's.
 */
import { isFinalStatus, type SandboxMode } from '@islet/protocol';
import type { DecisionStore } from './decision-store.ts';
import type { DecisionRecord } from './decision-types.ts';
import type { InFlightStore, RunHead } from './in-flight-store.ts';
import { jobRunId } from './jobs.ts';
import {
  type JobView,
  type ReconcilePolicy,
  type RecoveryAction,
  type RunView,
  reconcileRun,
} from './reconcile-run.ts';

/** One run due for a look, with the facts its feed knows of it. */
export interface RecoveryItem {
  runId: string;
  /** Its tenant, when the feed is the tenant's in-flight index. */
  tenant?: string;
  /** The mode whose paused-runs set or queue it was found in. */
  mode?: SandboxMode;
  inFlightSinceMs?: number;
  pausedSinceMs?: number;
  /** One of its decisions expired and the expiry was handed to this caller alone. */
  decisionExpired?: boolean;
  /** What its queue says of its job, when the feed knows (a failed job). */
  job?: JobView;
}

/** Where the runs due for a look come from; each tick takes a bounded batch. */
export interface RecoveryFeed {
  /** Names the feed in logs. */
  name: string;
  due(nowMs: number): AsyncIterable<RecoveryItem>;
}

/** What the loop reads of a run, through the stores. */
export interface RecoveryReads {
  /** The record's head (null: no record). */
  head(runId: string): Promise<RunHead | null>;
  /** The run's decisions (read for a paused run only). */
  decisions?(runId: string): Promise<DecisionRecord[]>;
  /** Whether the run's job exists in its mode's queue; undefined: this process cannot tell. */
  job?(mode: SandboxMode, runId: string): Promise<'present' | 'missing' | undefined>;
}

/** How one action is applied; the caller's capabilities (absent: this process does not apply it). */
export type RecoveryCapabilities = {
  [T in RecoveryAction['type']]?: (
    action: Extract<RecoveryAction, { type: T }>,
    item: RecoveryItem,
    head: RunHead | null,
  ) => Promise<void>;
};

export interface RunRecoveryLoopOptions {
  feeds: RecoveryFeed[];
  reads: RecoveryReads;
  capabilities: RecoveryCapabilities;
  policy: ReconcilePolicy;
  /** How often a tick runs, ms. */
  intervalMs: number;
  /** Runs before each tick's feeds (a gauge refresh). */
  beforeTick?: () => Promise<void>;
  /** A feed or a run that could not be recovered this tick (it is looked at again next tick). */
  onError?: (error: unknown, context: { feed: string; runId?: string }) => void;
  /** Each action once applied, with the feed that handed its run in (a metric counts them). */
  onApplied?: (action: RecoveryAction, context: { feed: string; runId: string }) => void;
  now?: () => number;
}

/** An action the loop applied. */
export interface AppliedAction {
  runId: string;
  action: RecoveryAction;
}

export function createRunRecoveryLoop(options: RunRecoveryLoopOptions) {
  const { feeds, reads, capabilities, policy } = options;
  const now = options.now ?? Date.now;
  const report = options.onError ?? (() => undefined);

  /**
   * Reconciles one run and applies its actions; returns those applied. `feed` names where the run
   * came from (a caller reconciling a run it was told of directly names itself).
   */
  async function reconcile(item: RecoveryItem, feed = 'direct'): Promise<AppliedAction[]> {
    const record = await reads.head(item.runId);
    const paused = item.pausedSinceMs !== undefined;
    const view: RunView = {
      record,
      job: item.job ?? { state: 'unknown' },
      ...(paused && record && !isFinalStatus(record.status) && reads.decisions
        ? { decisions: await reads.decisions(item.runId) }
        : {}),
      ...(item.inFlightSinceMs !== undefined ? { inFlightSinceMs: item.inFlightSinceMs } : {}),
      ...(paused ? { pausedSinceMs: item.pausedSinceMs } : {}),
      ...(item.decisionExpired ? { decisionExpired: true } : {}),
    };
    let actions = reconcileRun(view, now(), policy);
    if (actions.some((a) => a.type === 'check-job')) {
      const mode = record?.mode;
      const state = mode && reads.job ? await reads.job(mode, item.runId) : undefined;
      // A run whose queue this process cannot see is left to one that can.
      if (!state) return [];
      actions = reconcileRun({ ...view, job: { state } }, now(), policy);
    }
    const applied: AppliedAction[] = [];
    for (const action of actions) {
      const apply = capabilities[action.type] as
        | ((a: RecoveryAction, i: RecoveryItem, h: RunHead | null) => Promise<void>)
        | undefined;
      if (!apply) continue;
      await apply(action, item, record);
      applied.push({ runId: item.runId, action });
      options.onApplied?.(action, { feed, runId: item.runId });
    }
    return applied;
  }

  /** One pass over every feed's due runs; one run's failure does not stop the others. */
  async function tick(): Promise<AppliedAction[]> {
    const applied: AppliedAction[] = [];
    await options.beforeTick?.().catch((error: unknown) => report(error, { feed: 'before-tick' }));
    for (const feed of feeds) {
      try {
        for await (const item of feed.due(now())) {
          try {
            applied.push(...(await reconcile(item, feed.name)));
          } catch (error) {
            report(error, { feed: feed.name, runId: item.runId });
          }
        }
      } catch (error) {
        report(error, { feed: feed.name });
      }
    }
    return applied;
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  return {
    tick,
    reconcile,
    start() {
      timer = setInterval(() => {
        if (running) return;
        running = tick().finally(() => {
          running = undefined;
        });
      }, options.intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

export type RunRecoveryLoop = ReturnType<typeof createRunRecoveryLoop>;

/** Decisions whose time passed: `expireDue` hands each to exactly one caller, whichever loop asks. */
export function expiredDecisionsFeed(decisions: DecisionStore): RecoveryFeed {
  return {
    name: 'decision-expiry',
    async *due() {
      for (const d of await decisions.expireDue())
        yield { runId: d.runId, mode: d.mode, decisionExpired: true };
    },
  };
}

/**
 * Runs paused longer than `resumeRepairAfterMs` (a resume a crash interrupted, or a run that
 * ended while paused), up to `batch` per mode per tick, longest paused first.
 */
export function pausedRunsFeed(
  decisions: DecisionStore,
  modes: readonly SandboxMode[],
  resumeRepairAfterMs: number,
  batch = 100,
): RecoveryFeed {
  return {
    name: 'paused-repair',
    async *due(nowMs) {
      const cutoff = nowMs - resumeRepairAfterMs;
      for (const mode of modes)
        for (const runId of await decisions.pausedBefore(mode, cutoff, batch))
          yield { runId, mode, pausedSinceMs: cutoff };
    },
  };
}

/**
 * The tenants' in-flight index, walked whole once per `intervalMs` by whichever process takes the
 * recovery lock first (the others skip it until the lock lapses).
 */
export function inFlightFeed(inFlight: InFlightStore, intervalMs: number): RecoveryFeed {
  return {
    name: 'in-flight',
    async *due() {
      if (!(await inFlight.takeSweepLock(Math.max(1000, intervalMs - 500)))) return;
      for await (const { tenant, id, sinceMs } of inFlight.entries())
        yield { runId: id, tenant, inFlightSinceMs: sinceMs };
    },
  };
}

/** A queue's failed jobs, as much of BullMQ's `Queue.getFailed` as the feed reads. */
export interface FailedJobSource {
  getFailed(
    start: number,
    end: number,
  ): Promise<
    Array<{ id?: string; failedReason: string; data: { runId?: string; skill?: unknown } } | undefined>
  >;
}

/**
 * Jobs BullMQ failed for good, including those its stalled check fails without a worker `failed`
 * event. Each failed job is handed on once per process (a bounded memory of those seen).
 */
export function failedJobsFeed(
  queues: () => Iterable<[SandboxMode, FailedJobSource]>,
  batch = 100,
  remember = 10_000,
): RecoveryFeed {
  const seen = new Set<string>();
  return {
    name: 'failed-jobs',
    async *due() {
      for (const [mode, queue] of queues()) {
        for (const job of await queue.getFailed(0, batch - 1)) {
          if (!job?.id || job.data.skill || seen.has(job.id)) continue;
          seen.add(job.id);
          if (seen.size > remember) seen.delete(seen.values().next().value as string);
          yield {
            runId: jobRunId(job),
            mode,
            job: { state: 'failed', reason: job.failedReason || 'the job failed' },
          };
        }
      }
    },
  };
}
