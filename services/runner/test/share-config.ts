/**
 * The fair share's settings the runner's fair-share and lease tests run under, written out in each
 * until round 51 (`test-dedupe-4`).
 */
import type { FairShareDeps } from '../src/fair-share.ts';

/**
 * 4 slots, no runner name, a tenant's share half the pool, no cap on a tenant's executing runs,
 * 30 s leases; `over` replaces any of them.
 */
export function shareConfig(over: Partial<FairShareDeps['config']> = {}): FairShareDeps['config'] {
  return {
    ISLET_RUNNER_CONCURRENCY: 4,
    ISLET_RUNNER_NAME: undefined,
    ISLET_TENANT_POOL_SHARE: 0.5,
    ISLET_TENANT_MAX_EXECUTING_PER_POOL: 0,
    ISLET_TENANT_SHARE_LEASE_MS: 30_000,
    ...over,
  };
}
