/** The run_code limits and their texts, and the sandbox host's own heap settings. */
import { setFlagsFromString } from 'node:v8';

/*
 * The sandbox host loads this file on its own (no package imports: it runs jailed, from a
 * type-stripped copy), so the run_code limits are spelled here as numbers; they are protocol's
 * RUN_CODE_LIMITS, and limits.test.ts holds them equal.
 */
/** Default time budget, ms. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Ceiling of the time budget, ms; a longer request is capped. */
export const MAX_TIMEOUT_MS = 600_000;
/** Default isolate heap ceiling, MiB. */
export const DEFAULT_MEMORY_MB = 512;
/** Default cap shared by the log lines and the returned value, bytes (64 MiB). */
export const DEFAULT_OUTPUT_BYTES = 67_108_864;
export const DEFAULT_MAX_CONCURRENT_CALLS = 128;
export const DEFAULT_WATCHDOG_GRACE_MS = 1000;

/**
 * Resident memory a sandbox host may reach during a run, bytes: twice the isolate's heap limit
 * plus headroom. Past it the run ends as if out of heap: memory V8 does not count against the
 * isolate (a defect, a new kind of buffer) cannot grow without bound.
 */
export function hostResidentLimitBytes(memoryMb: number): number {
  return (memoryMb * 2 + 256) * 1024 * 1024;
}

/** The failure of a program past its heap limit (or its host's resident bound). */
export function heapLimitMessage(memoryMb: number): string {
  return `the program exceeded its heap limit of ${memoryMb} MiB`;
}

/** The timeout failure's message: `execution deadline reached (120000ms)` for the default budget. */
export function deadlineMessage(budgetMs: number): string {
  return `execution deadline reached (${budgetMs}ms)`;
}

export function outputLimitMessage(capBytes: number): string {
  return `output exceeded the cap of ${capBytes} bytes`;
}

/** The effective budget: default when omitted, capped at the ceiling, `null` = no deadline. */
export function effectiveTimeoutMs(requested: number | null | undefined): number | null | 'invalid' {
  if (requested === null) return null;
  if (requested === undefined) return DEFAULT_TIMEOUT_MS;
  if (typeof requested !== 'number' || !Number.isFinite(requested) || requested <= 0) return 'invalid';
  return Math.min(Math.ceil(requested), MAX_TIMEOUT_MS);
}

/**
 * The sandbox host's own semi-space cap, MB (`--max-semi-space-size` on its command line): V8
 * doubled the host's young generation under the allocation of busy runs and kept it, +4 MB of
 * resident memory counted against its growth bound (under 4 concurrent trivial runs, 2-4x as many
 * hosts were replaced for memory). The host's live data is small, so its scavenges stay cheap.
 */
export const HOST_SEMI_SPACE_MB = 1;

/**
 * Unsets `--max-semi-space-size` once the host's own heap was made with it: V8 reads the flag again
 * for every isolate it makes, over the young generation isolated-vm sizes from a program's memory
 * limit, and a program building a large live structure ran ~1.5x slower in 1 MB halves.
 */
export function releaseHostSemiSpaceFlag(): void {
  setFlagsFromString('--max-semi-space-size=0');
}
