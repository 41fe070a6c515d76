/**
 * Each tenant's bounded share of Redis bytes (`@islet/core` tenant-bytes-store.ts): a tenant whose
 * retained runs hold its share has its submits refused (507, for that tenant only) until retained
 * data expires, so one tenant cannot fill Redis for every tenant. The share is the smaller of
 * ISLET_TENANT_STORED_MAX_BYTES and ISLET_TENANT_REDIS_SHARE of Redis's `maxmemory`.
 *
 * Usage is read on every submit, inside the run's admission script (`limitBytes` is the share it
 * checks; `@islet/runs` run-store.ts AdmissionStorage), so the check costs the submit no round
 * trip of its own; a submit refused before its admission (an invalid request) is checked here
 * (`check`), so a tenant past its share hears that first either way. A run's output is counted
 * when the run ends, so a tenant can pass its share by at most what its runs in flight
 * print (its in-flight quota bounds that).
 */
import type { GatewayDeps } from './deps.ts';
import { HttpProblem } from './problem-reply.ts';

const MAXMEMORY_FRESH_MS = 60_000;

export function createStorageQuota(deps: Pick<GatewayDeps, 'storedBytes' | 'config' | 'logger'>) {
  const { config } = deps;
  let limit = { bytes: config.ISLET_TENANT_STORED_MAX_BYTES, at: 0 };

  /**
   * The share, as a number while the last reading is fresh (every submit but one a minute: no
   * promise and no await on the submit's path), else a promise of it read afresh.
   */
  function limitBytes(): number | Promise<number> {
    if (Date.now() - limit.at < MAXMEMORY_FRESH_MS) return limit.bytes;
    return readLimit();
  }

  async function readLimit(): Promise<number> {
    const max = await deps.storedBytes.maxMemoryBytes().catch(() => 0);
    const share = max > 0 ? Math.floor(max * config.ISLET_TENANT_REDIS_SHARE) : Number.POSITIVE_INFINITY;
    limit = { bytes: Math.min(config.ISLET_TENANT_STORED_MAX_BYTES, share), at: Date.now() };
    return limit.bytes;
  }

  return {
    /** The share of storage of each tenant, bytes (Infinity: none). */
    limitBytes,
    /** Refuses (507) a tenant whose retained data holds its share. */
    async check(tenant: string): Promise<void> {
      // Read afresh (one MGET): ends count their output in Redis, not here, so a cached figure
      // would let a tenant that ends runs quickly pass its share by whatever it ended within the
      // cache's lifetime.
      const [bytes, max] = await Promise.all([deps.storedBytes.usage(tenant), limitBytes()]);
      if (bytes >= max) throw storageQuotaProblem(bytes, max);
    },
  };
}

/** The 507 of a tenant whose retained data holds `usedBytes`, its share being `limitBytes`. */
export function storageQuotaProblem(usedBytes: number, limitBytes: number): HttpProblem {
  return new HttpProblem(
    'storage-quota-exceeded',
    `this tenant's retained runs hold ${usedBytes} bytes, its share of storage is ${limitBytes}; new runs are refused until older ones expire (ISLET_RUN_RETENTION_SECONDS)`,
    { usedBytes, limitBytes },
    { 'retry-after': '60' },
  );
}

/** About what a new run's record holds once sealed (base64url: 4/3 of the bytes, plus the envelope). */
export function storedSizeOf(run: { code: string; description: string; request: unknown }): number {
  const plain =
    Buffer.byteLength(run.code) + Buffer.byteLength(run.description) + JSON.stringify(run.request).length;
  return Math.ceil((plain * 4) / 3) + 512;
}
