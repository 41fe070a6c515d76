/** The engine's options with their defaults applied (createEngine reads them once). */
import { DEFAULT_HOST_NICE, MAX_NICE } from './host-priority.ts';
import { DEFAULT_WATCHDOG_GRACE_MS } from './limits.ts';
import { positiveInt } from './run-request.ts';
import type { EngineOptions } from './types.ts';

const DEFAULT_MAX_RUNS_PER_PROCESS = 1000;
const DEFAULT_MAX_HOST_RESIDENT_GROWTH_BYTES = 10 * 1024 * 1024;
const DEFAULT_STARTUP_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_IDLE_PER_PARTITION = 2;
const DEFAULT_MAX_IDLE_TOTAL = 8;
const DEFAULT_MAX_STARTING_HOSTS = 4;

export interface EngineSettings {
  maxRunsPerProcess: number;
  watchdogGraceMs: number;
  startupTimeoutMs: number;
  /** Idle hosts kept a partition, and in all. */
  maxIdle: number;
  maxIdleTotal: number;
  /** Runs before its run bound at which a host's replacement starts. */
  spareLeadRuns: number;
  /** Private resident growth a host may reach, bytes (0: not checked). */
  maxGrowth: number;
  prewarm: boolean;
  maxStarting: number;
  /** The hosts' niceness, 0 (unchanged) – 19. */
  hostNice: number;
}

export function engineSettings(options: EngineOptions): EngineSettings {
  const maxRunsPerProcess = positiveInt(options.maxRunsPerProcess, DEFAULT_MAX_RUNS_PER_PROCESS);
  return {
    maxRunsPerProcess,
    watchdogGraceMs: positiveInt(options.watchdogGraceMs, DEFAULT_WATCHDOG_GRACE_MS),
    startupTimeoutMs: positiveInt(options.startupTimeoutMs, DEFAULT_STARTUP_TIMEOUT_MS),
    maxIdle: Math.max(0, Math.floor(options.maxIdlePerPartition ?? DEFAULT_MAX_IDLE_PER_PARTITION)),
    maxIdleTotal: Math.max(0, Math.floor(options.maxIdleTotal ?? DEFAULT_MAX_IDLE_TOTAL)),
    spareLeadRuns: Math.max(1, Math.min(25, Math.floor(maxRunsPerProcess / 4))),
    maxGrowth: Math.max(
      0,
      Math.floor(options.maxHostResidentGrowthBytes ?? DEFAULT_MAX_HOST_RESIDENT_GROWTH_BYTES),
    ),
    prewarm: options.prewarm !== false,
    maxStarting: positiveInt(options.maxStartingHosts, DEFAULT_MAX_STARTING_HOSTS),
    hostNice:
      options.hostNice === undefined || !Number.isFinite(options.hostNice)
        ? DEFAULT_HOST_NICE
        : Math.max(0, Math.min(MAX_NICE, Math.floor(options.hostNice))),
  };
}
