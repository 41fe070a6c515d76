/**
 * The fair share's slot lease scripts (the runner's fair-share.ts decides with them): taken alone
 * (`lease-acquire-6`) or, on one server, with a run's attempt start (`lease-and-begin-9`, the
 * journal's beginAttempt); given back alone (`lease-release-5`) or, on one server, with the run's
 * end (`finish-run-release-18`, the run store's finish). Their Lua lives here, beside the run's
 * scripts they are combined with, so each decision is written once.
 */
import { keys } from '@islet/core';
import { loadScript } from './lua-scripts.ts';

export const LEASE_ACQUIRE = loadScript('lease-acquire-6');
export const LEASE_RELEASE = loadScript('lease-release-5');

/** What a lease's scripts need of the job and the pool's fair share. */
export interface LeaseTerms {
  mode: string;
  tenant: string;
  jobId: string;
  /** ISLET_TENANT_POOL_SHARE. */
  share: number;
  /** ISLET_TENANT_MAX_EXECUTING_PER_POOL (0: none). */
  cap: number;
  leaseMs: number;
}

/** An acquire's answer: granted, the tenant's limit, a deferred job whose reservation must be promoted. */
export interface LeaseAnswer {
  ok: boolean;
  limit: number;
  swapped?: string;
}

/**
 * A slot lease the runner lets a run's scripts take and give back (one server only): the
 * attempt's start takes it (`acquired` gets the answer) and the run's end gives it back while the
 * runner still holds it (`held`; a parked run gave it back already), then tells `released` which
 * deferred job the freed slot went to, if any.
 */
export interface RunLease extends LeaseTerms {
  acquired(answer: LeaseAnswer): void;
  held(): boolean;
  released(next: { jobId: string; tenant: string } | undefined): void;
}

/** lease-acquire-6's keys and arguments (KEYS[1..6], ARGV[1..5]). */
export function acquireCall(t: LeaseTerms): { keys: string[]; args: (string | number)[] } {
  return {
    keys: [
      keys.poolSlots(t.mode),
      keys.poolBusy(t.mode),
      keys.poolQueued(t.mode),
      keys.poolWaiting(t.mode),
      keys.poolTenantLeases(t.mode, t.tenant),
      keys.poolTenantDeferred(t.mode, t.tenant),
    ],
    args: [t.jobId, t.tenant, t.share, t.cap, t.leaseMs],
  };
}

/** lease-release-5's keys and arguments (KEYS[1..5], ARGV[1..5]); jobId '' releases none. */
export function releaseCall(t: LeaseTerms): { keys: string[]; args: (string | number)[] } {
  return {
    keys: [
      keys.poolSlots(t.mode),
      keys.poolBusy(t.mode),
      keys.poolQueued(t.mode),
      keys.poolWaiting(t.mode),
      keys.poolTenantLeases(t.mode, t.tenant),
    ],
    args: [t.jobId, t.share, t.cap, t.leaseMs, keys.poolTenantPrefix(t.mode)],
  };
}

/** An acquire's reply as an answer. */
export function leaseAnswerOf(reply: unknown): LeaseAnswer {
  const [ok, limit, swapped] = reply as [number, number, string | undefined];
  return { ok: ok === 1, limit, ...(swapped ? { swapped } : {}) };
}
