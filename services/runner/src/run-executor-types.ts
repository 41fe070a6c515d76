/**
 * The shapes of a run executor (run-executor.ts): its dependencies, a job, a replay's carry-over,
 * its results and the hand-back error; apart so the executor stays under ~400 lines.
 */
import type { Logger, Metrics, SettingsStore } from '@islet/core';
import type { Engine, RunCancel, SandboxFacts } from '@islet/engine';
import type { WorkspaceStore } from '@islet/kernel-sandbox';
import type { SandboxMode } from '@islet/protocol';
import type { CallJournal, RunLease, RunStore } from '@islet/runs';
import type { ExecutionSlot } from './call-parking.ts';
import type { GatewayClient } from './gateway-client.ts';

export interface RunExecutorDeps {
  runs: RunStore;
  settings: SettingsStore;
  journal: CallJournal;
  engineFor: (mode: SandboxMode) => Engine;
  /** The file-sandbox facts runs of a mode execute under (undefined: no kernel launcher). */
  sandboxFacts?: (mode: SandboxMode) => SandboxFacts | undefined;
  /**
   * Session workspaces. When given, every run gets the built-in `files.read/write/list/remove`
   * bindings on its session's workspace, served in this runner (see files-calls.ts).
   */
  workspaces?: WorkspaceStore;
  /**
   * ISLET_SANDBOX_ENFORCEMENT_REQUIRED=full: on a host that enforces only partly, runs fail
   * `sandbox-unavailable` before they start instead of running with partial limits.
   */
  requireFullEnforcement?: boolean;
  /**
   * Live output (`log` events on the run's stream while it runs; live-log.ts): bytes per run at
   * most and how long lines gather. Absent: no live output (the end record still has it all).
   */
  liveLog?: { maxBytes: number; flushMs: number };
  /** Tenants whose usage metrics carry their own label (ISLET_METRICS_TENANTS); others count as `other`. */
  meteredTenants?: readonly string[];
  /** A run parks once it waited this long with calls out and no answer arriving (ISLET_RUNNER_PARK_AFTER_MS). Default 100. */
  parkAfterMs?: number;
  /**
   * Whether the run store keeps an end's stage stamps (ISLET_RUN_STAGE_TIMINGS, its `stageTimings`;
   * default true). False: the executor takes none (four clock reads and the stamps' object a run
   * nothing would store).
   */
  stageTimings?: boolean;
  gateway: GatewayClient;
  metrics: Metrics;
  logger: Logger;
}

/** Thrown when the runner is shutting down mid-run: the job goes back to the queue, the run is not ended. */
export class HandBackError extends Error {
  override name = 'HandBackError';
}

export interface ExecuteJob {
  runId: string;
  mode: SandboxMode;
  enqueuedAtMs: number;
  /** When the worker handed the job to its processor (stage timings), ms with sub-ms precision. */
  fetchedAtMs?: number;
  /** Aborted by a cancel request for this run. */
  cancel: AbortSignal;
  /** Aborted when the runner must hand the job back (shutdown grace ran out). */
  handBack: AbortSignal;
  /** Aborted when either of the two is (given by the runner; else made from them). */
  stop?: AbortSignal;
  /**
   * Given by the runner (run-job.ts): whether `cancel` / `handBack` were aborted, read without
   * making those signals, which its job makes only when first asked for. Absent: the signals are read.
   */
  cancelled?: boolean;
  handedBack?: boolean;
  /**
   * Aborted with `stop` (given by the runner with it): handed to the engine instead of `stop`, so a
   * run costs no EventTarget listener (the engine's RunCancel).
   */
  stopEngine?: RunCancel;
  /** The job's slot: given, the run parks while its calls wait (call-parking.ts). */
  slot?: ExecutionSlot;
  /** The job's slot lease in its pool, taken by the attempt's start (one server; tenant-slot.ts). */
  lease?: RunLease;
}

/** What a replay after a release carries over from the executions before it. */
export interface Replay {
  pickedUp: number;
  /** When the first execution's engine started: an elapsed budget runs from there. */
  firstEngineCalled: number;
  /** Budget counted by the executions so far (`excluding-binding-waits` counts no waits). */
  budgetSpentMs: number;
}

export type ExecuteResult =
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'waiting'
  | 'skipped'
  | 'superseded'
  | 'deferred';

/**
 * What `execute` returns for a run whose end it wrote with `status`: its job's return value,
 * which BullMQ stores; a completion sent as the end is handed over (run-processing.ts) stores it
 * before `execute` has returned it.
 */
export const endedResult = (status: 'Completed' | 'Failed' | 'Cancelled'): ExecuteResult =>
  status === 'Completed' ? 'completed' : status === 'Cancelled' ? 'cancelled' : 'failed';

/** Whether a cancel request aborted the job (the runner's flag when given: no signal made for it). */
export const cancelledOf = (job: ExecuteJob): boolean => job.cancelled ?? job.cancel.aborted;

/** Whether the runner handed the job back (its flag when given: no signal made for it). */
export const handedBackOf = (job: ExecuteJob): boolean => job.handedBack ?? job.handBack.aborted;

/** The job's stop signal: the runner's, else one made from `cancel` and `handBack`. */
export const stopSignalOf = (job: ExecuteJob): AbortSignal =>
  job.stop ?? AbortSignal.any([job.cancel, job.handBack]);
