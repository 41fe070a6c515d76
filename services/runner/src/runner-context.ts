/**
 * What the parts of a runner (runner.ts) share: its dependencies and the per-mode state its
 * processor, tenant slots and mode workers read and write; apart so each part is a module of its own.
 */

import type { IsletConfig, Logger, Metrics } from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import type { RunJobData } from '@islet/runs';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { endsUnbakedAtScrape } from './end-complete-store.ts';
import type { FairShare } from './fair-share.ts';
import type { OneSlotMap } from './one-slot-map.ts';
import type { OneSlotSet } from './one-slot-set.ts';
import type { ParkingWorker } from './parking-worker.ts';
import type { RunExecutor } from './run-executor.ts';
import type { RunJob } from './run-job.ts';
import type { SkillExecutor } from './skill-executor.ts';
import { type FetchedWaits, SlotGate } from './slot-gate.ts';

/**
 * A cancel request for a running job, or its hand-back at shutdown: aborts that signal, then the
 * engine's handle and `stop` with its reason (run-job.ts; its signals are made when first asked for).
 */
export function abortRun(job: RunJob, which: 'cancel' | 'handBack'): void {
  job.abort(which);
}

/** One mode's BullMQ worker and Queue, on one connection; replaced whole by a restart. */
export interface ModeWorker {
  connection: Redis;
  worker: ParkingWorker<RunJobData>;
  queue: Queue<RunJobData>;
}

/** A runner's state, made by `createRunner` and passed to its parts. */
export interface RunnerContext {
  config: IsletConfig;
  executor: RunExecutor;
  /** Runs `skill` jobs (run_code skill requests queued on the same mode queues). */
  skills: SkillExecutor | undefined;
  metrics: Metrics;
  logger: Logger;
  /** Running jobs by run id: one to none every run at one client (one-slot-map.ts). */
  active: OneSlotMap<string, RunJob>;
  gates: Map<SandboxMode, SlotGate>;
  /** Jobs inside process() per mode, deferred ones included: a worker holding any is never restarted. */
  held: Partial<Record<SandboxMode, number>>;
  lastPickupAtMs: Partial<Record<SandboxMode, number>>;
  modeWorkers: Map<SandboxMode, ModeWorker>;
  share: FairShare | undefined;
  /** The runner's close began: no worker is made any more (a restart in flight makes none). */
  stopping: boolean;
  /** Lease releases still in flight (they never reject: a failed one is logged and lapses). */
  releasing: OneSlotSet<Promise<void>>;
  /**
   * The runner's subscriber holding its workers' live channels (@islet/runs handoff-live.ts): a
   * gateway with ISLET_HANDOFF_LIVE_CHECK on hands a job only to a registration whose channel is
   * held, and Redis drops the subscriptions with a dead runner's connection. Unset before start.
   */
  live?: { hold(channel: string): void; drop(channel: string): void };
}

/**
 * Every runner's gates by the metrics they report to (one a process, outside tests), read when the
 * gauges are scraped.
 */
const gatesByMetrics = new WeakMap<Metrics, Set<RunnerContext>>();

/**
 * `islet_runner_slots` and `islet_runner_parked_runs` are read from the gates when scraped (prom-client's
 * `collect`), not set at every change: a run's take and end changed the busy count, and each change
 * set two labelled gauges (a label hash, a sort and a validation each) on the pick-up's path and the
 * end's (test/bench/README.md, round 28 `runner-path`). The values are the same: the gates' counts
 * at the moment of the scrape. Runners sharing one registry (tests) report their sums.
 */
function gaugesAtScrape(ctx: RunnerContext): void {
  const { metrics } = ctx;
  let contexts = gatesByMetrics.get(metrics);
  if (contexts) {
    contexts.add(ctx);
    return;
  }
  contexts = new Set([ctx]);
  gatesByMetrics.set(metrics, contexts);
  const all = contexts;
  const sums = () => {
    const by = new Map<SandboxMode, { busy: number; idle: number; kept: number; released: number }>();
    for (const c of all)
      for (const [mode, gate] of c.gates) {
        const s = gate.state();
        const sum = by.get(mode) ?? { busy: 0, idle: 0, kept: 0, released: 0 };
        sum.busy += s.busy;
        sum.idle += Math.max(0, c.config.ISLET_RUNNER_CONCURRENCY - s.busy);
        sum.kept += s.parkedWithIsolate;
        sum.released += s.parkedReleased;
        by.set(mode, sum);
      }
    return by;
  };
  (metrics.runnerSlots as { collect?: () => void }).collect = () => {
    for (const [mode, s] of sums()) {
      metrics.runnerSlots.set({ mode, state: 'busy' }, s.busy);
      metrics.runnerSlots.set({ mode, state: 'idle' }, s.idle);
    }
  };
  (metrics.parkedRuns as { collect?: () => void }).collect = () => {
    for (const [mode, s] of sums()) {
      metrics.parkedRuns.set({ mode, isolate: 'kept' }, s.kept);
      metrics.parkedRuns.set({ mode, isolate: 'released' }, s.released);
    }
  };
  fetchedWaitsAtScrape(metrics, all);
  endsUnbakedAtScrape(metrics);
}

/**
 * The fetched jobs' waits for a slot (`SlotGate.waits`), read when scraped as the slots are: the
 * operator's view of the bound that no fetched job waits past about one run for a slot
 * (test/bench/README.md, round 33 `slot-bound`). The counters report what the gates counted since
 * the last scrape.
 */
function fetchedWaitsAtScrape(metrics: Metrics, all: Set<RunnerContext>): void {
  const counted = new Map<string, number>();
  const add = (counter: Metrics['fetchedWaits'], mode: SandboxMode, kind: string, total: number) => {
    const key = `${mode} ${kind}`;
    const more = total - (counted.get(key) ?? 0);
    // Inc'd by 0 too: the series shows from the first scrape.
    counter.inc({ mode }, Math.max(0, more));
    counted.set(key, total);
  };
  const read = () => {
    const by = new Map<SandboxMode, FetchedWaits>();
    for (const c of all)
      for (const [mode, gate] of c.gates) {
        const w = gate.waits();
        const sum = by.get(mode) ?? { waiting: 0, oldestMs: 0, longestMs: 0, waited: 0, passedOver: 0 };
        sum.waiting += w.waiting;
        sum.oldestMs = Math.max(sum.oldestMs, w.oldestMs);
        sum.longestMs = Math.max(sum.longestMs, w.longestMs);
        sum.waited += w.waited;
        sum.passedOver += w.passedOver;
        by.set(mode, sum);
      }
    for (const [mode, s] of by) {
      metrics.fetchedUnstarted.set({ mode }, s.waiting);
      metrics.fetchedWaitOldest.set({ mode }, s.oldestMs / 1000);
      metrics.fetchedWaitLongest.set({ mode }, s.longestMs / 1000);
      add(metrics.fetchedWaits, mode, 'waited', s.waited);
      add(metrics.slotsPassedOver, mode, 'passedOver', s.passedOver);
    }
  };
  // Each of the five reads them all (a scrape collects each metric in turn): a few gates' counts.
  for (const m of [
    metrics.fetchedUnstarted,
    metrics.fetchedWaitOldest,
    metrics.fetchedWaitLongest,
    metrics.fetchedWaits,
    metrics.slotsPassedOver,
  ])
    (m as { collect?: () => void }).collect = read;
}

/** A mode's slots and parked runs; kept across worker restarts (the jobs they count outlive a worker). */
export function gateFor(ctx: RunnerContext, mode: SandboxMode): SlotGate {
  const { config, gates, metrics } = ctx;
  let gate = gates.get(mode);
  if (!gate) {
    if (gates.size === 0) gaugesAtScrape(ctx);
    gate = new SlotGate({
      slots: config.ISLET_RUNNER_CONCURRENCY,
      parkedMax: config.ISLET_RUNNER_PARKED_MAX,
      isolatesMax: config.ISLET_RUNNER_PARKED_ISOLATES_MAX,
      onPark: () => metrics.parkings.inc({ mode, isolate: 'kept' }),
      onRelease: () => metrics.parkings.inc({ mode, isolate: 'released' }),
    });
    gates.set(mode, gate);
  }
  return gate;
}
