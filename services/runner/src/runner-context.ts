/**
 * What the parts of a runner (runner.ts) share: its dependencies and the per-mode state its
 * processor, tenant slots and mode workers read and write; apart so each part is a module of its own.
 */

import type { IsletConfig, Logger, Metrics } from '@islet/core';
import type { SandboxMode } from '@islet/protocol';
import type { RunJobData } from '@islet/runs';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { FairShare } from './fair-share.ts';
import type { ParkingWorker } from './parking-worker.ts';
import type { RunExecutor } from './run-executor.ts';
import type { SkillExecutor } from './skill-executor.ts';
import { SlotGate } from './slot-gate.ts';

/**
 * A running job's signals: `stop` is aborted with whichever of the other two is, first, with its
 * reason (what `AbortSignal.any` would give, without making a composite signal for every run).
 */
export interface RunControls {
  cancel: AbortController;
  handBack: AbortController;
  stop: AbortController;
}

export function abortRun(ctl: RunControls, which: 'cancel' | 'handBack'): void {
  ctl[which].abort();
  ctl.stop.abort(ctl[which].signal.reason);
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
  active: Map<string, RunControls>;
  gates: Map<SandboxMode, SlotGate>;
  /** Jobs inside process() per mode, deferred ones included: a worker holding any is never restarted. */
  held: Partial<Record<SandboxMode, number>>;
  lastPickupAtMs: Partial<Record<SandboxMode, number>>;
  modeWorkers: Map<SandboxMode, ModeWorker>;
  share: FairShare | undefined;
  /** The runner's close began: no worker is made any more (a restart in flight makes none). */
  stopping: boolean;
  /** Lease releases still in flight (they never reject: a failed one is logged and lapses). */
  releasing: Set<Promise<void>>;
}

/** A mode's slots and parked runs; kept across worker restarts (the jobs they count outlive a worker). */
export function gateFor(ctx: RunnerContext, mode: SandboxMode): SlotGate {
  const { config, gates, metrics } = ctx;
  let gate = gates.get(mode);
  if (!gate) {
    // The gauges are set when their value changes: the gate reports every take and end, and
    // a labelled gauge's set hashes its labels each time (parked counts rarely move).
    const last = { busy: -1, kept: -1, released: -1 };
    gate = new SlotGate({
      slots: config.ISLET_RUNNER_CONCURRENCY,
      parkedMax: config.ISLET_RUNNER_PARKED_MAX,
      isolatesMax: config.ISLET_RUNNER_PARKED_ISOLATES_MAX,
      onChange: (s) => {
        if (s.busy !== last.busy) {
          last.busy = s.busy;
          metrics.runnerSlots.set({ mode, state: 'busy' }, s.busy);
          metrics.runnerSlots.set(
            { mode, state: 'idle' },
            Math.max(0, config.ISLET_RUNNER_CONCURRENCY - s.busy),
          );
        }
        if (s.parkedWithIsolate !== last.kept) {
          last.kept = s.parkedWithIsolate;
          metrics.parkedRuns.set({ mode, isolate: 'kept' }, s.parkedWithIsolate);
        }
        if (s.parkedReleased !== last.released) {
          last.released = s.parkedReleased;
          metrics.parkedRuns.set({ mode, isolate: 'released' }, s.parkedReleased);
        }
      },
      onPark: () => metrics.parkings.inc({ mode, isolate: 'kept' }),
      onRelease: () => metrics.parkings.inc({ mode, isolate: 'released' }),
    });
    gates.set(mode, gate);
  }
  return gate;
}
