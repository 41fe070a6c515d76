/**
 * An `execute` call's request, read: what is refused before any host is taken, and the Run's
 * parameters (run-params.ts) from the caller's options with the engine's defaults and bounds.
 */
import { randomBytes } from 'node:crypto';
import { RUN_CODE_REFUSALS } from '@islet/protocol';
import type { DeadlineWheel } from './deadline-wheel.ts';
import {
  DEFAULT_MAX_CONCURRENT_CALLS,
  DEFAULT_MEMORY_MB,
  DEFAULT_OUTPUT_BYTES,
  effectiveTimeoutMs,
} from './limits.ts';
import { validateBindingNames } from './names.ts';
import type { ResidentTicker } from './resident-guard.ts';
import type { RunParams } from './run-params.ts';
import type { ExecuteOptions, RunFailure, RunOutcome } from './types.ts';

const MIN_MEMORY_MB = 8;

export function positiveInt(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

export interface CheckedRequest {
  bindings: string[];
  timeoutMs: number | null;
}

/** The request's refusal (no host taken for it), or its bindings and time budget. */
export function checkRequest(code: unknown, opts: ExecuteOptions): RunFailure | CheckedRequest {
  if (typeof code !== 'string') return { kind: 'exception', message: 'the program is not a string' };
  const bindings = [...new Set(opts.bindings ?? [])];
  const refusal = validateBindingNames(bindings);
  if (refusal) return { kind: 'exception', message: refusal };
  const timeoutMs = effectiveTimeoutMs(opts.limits?.timeoutMs);
  if (timeoutMs === 'invalid') return { kind: 'exception', message: RUN_CODE_REFUSALS.timeoutMs };
  if (opts.sandbox?.requireFullEnforcement && opts.sandbox.enforcement !== 'full') {
    return {
      kind: 'sandbox-unavailable',
      message: `file sandbox enforcement for ${opts.sandbox.mode} is only partial on this host`,
    };
  }
  return { bindings, timeoutMs };
}

export function runParams(
  code: string,
  opts: ExecuteOptions,
  checked: CheckedRequest,
  engine: {
    watchdogGraceMs: number;
    readResident: ((pid: number) => number | undefined) | undefined;
    residentTicker: ResidentTicker;
    deadlines: DeadlineWheel;
  },
): RunParams {
  const limits = opts.limits;
  return {
    code,
    config: {
      bindings: checked.bindings,
      clockMs: typeof opts.clockMs === 'number' && Number.isFinite(opts.clockMs) ? opts.clockMs : Date.now(),
      seed: opts.randomSeed ?? randomBytes(16).toString('hex'),
    },
    onCall: opts.onCall,
    timeoutMs: checked.timeoutMs,
    spentMs:
      typeof limits?.spentMs === 'number' && Number.isFinite(limits.spentMs)
        ? Math.max(0, limits.spentMs)
        : 0,
    excludeBindingWaits: limits?.timeBudget === 'excluding-binding-waits',
    // isolated-vm's smallest heap is 8 MiB.
    memoryMb: Math.max(MIN_MEMORY_MB, positiveInt(limits?.memoryMb, DEFAULT_MEMORY_MB)),
    outputBytes: Math.min(positiveInt(limits?.outputBytes, DEFAULT_OUTPUT_BYTES), DEFAULT_OUTPUT_BYTES),
    outputCap: limits?.outputCap === 'separate' ? 'separate' : 'shared',
    maxConcurrentCalls: positiveInt(limits?.maxConcurrentCalls, DEFAULT_MAX_CONCURRENT_CALLS),
    watchdogGraceMs: engine.watchdogGraceMs,
    signal: opts.signal,
    cancel: opts.cancel,
    onLog: opts.onLog,
    readResident: engine.readResident,
    residentTicker: engine.residentTicker,
    deadlines: engine.deadlines,
  };
}

export function sandboxFacts(s: NonNullable<ExecuteOptions['sandbox']>): NonNullable<RunOutcome['sandbox']> {
  return { mode: s.mode, enforcement: s.enforcement, ...(s.denied ? { denied: true } : {}) };
}
