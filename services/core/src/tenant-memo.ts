/**
 * Per-tenant memos of key names: what a run's submit and end name for their tenant (its index, its
 * in-flight set, its stored-bytes counters, its rate window) is the same text run after run, and
 * building it afresh was ~0.5–1.4 KB of garbage a run on each of the gateway and the runner
 * (test/bench/README.md, round 37 `end-spreads`, round 38 `tidy`). Names only (a tenant's id in
 * core's fixed patterns), nothing secret.
 */
import { BoundedMap } from './bounded-map.ts';

/** Tenants a memo keeps at most; past this it forgets its oldest (their names are made again, equal). */
export const TENANT_MEMO_MAX = 1024;

/**
 * `make(tenant, step)` made once a tenant and step. A tenant keeps the value of the last step asked
 * only: a step is a time bucket that names move on with (a rate window, a stored-bytes bucket, a
 * usage day), every run of it asks for the same one, and an older step asked again is made again
 * (equal). Values are shared between callers: make them immutable (frozen objects, strings; a
 * list typed `readonly`, not frozen: a frozen array leaves V8's fast `slice` and `concat`). Bounded
 * as a cache (core's `BoundedMap`: never more than `max` tenants, the last `max / 2` at least
 * kept); a tenant forgotten is made again, equal.
 */
export function tenantMemo<T>(
  make: (tenant: string, step: number) => T,
  max = TENANT_MEMO_MAX,
): (tenant: string, step?: number) => T {
  const memo = new BoundedMap<string, { step: number; value: T }>(max);
  return (tenant, step = 0) => {
    const known = memo.get(tenant);
    if (known !== undefined && known.step === step) return known.value;
    const value = make(tenant, step);
    if (known !== undefined) {
      known.step = step;
      known.value = value;
      return value;
    }
    memo.set(tenant, { step, value });
    return value;
  };
}
