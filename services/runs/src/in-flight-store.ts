/**
 * The in-flight index read for recovery: each tenant's set of runs not yet ended (run id → when it
 * was added), written by the run's create and end scripts on the tenant's slot, apart from the run
 * record. The recovery loop's in-flight feed walks it under a lock one gateway holds per interval.
 */
import { keys } from '@islet/core';
import type { RunStatus, SandboxMode } from '@islet/protocol';
import type { Redis } from 'ioredis';

interface InFlightEntry {
  tenant: string;
  id: string;
  /** When the entry was added, ms. */
  sinceMs: number;
}

/** The record's fields recovery reads (null: no record). */
export interface RunHead {
  status: RunStatus;
  attempts: number;
  createdAt: number;
  mode: SandboxMode | undefined;
}

export function createInFlightStore(redis: Redis) {
  return {
    /** True when this caller holds the recovery lock for `holdMs` (one in-flight walk per interval). */
    async takeSweepLock(holdMs: number): Promise<boolean> {
      return (await redis.set(keys.orphanSweepLock(), String(process.pid), 'PX', holdMs, 'NX')) === 'OK';
    },
    /**
     * Every tenant's in-flight entries, tenant by tenant, read `batch` at a time with a cursor
     * (ZSCAN): memory stays bounded however many runs a tenant has, and entries removed during the
     * walk (recovery drops some) make it skip none of those that stay (one may come twice: the
     * matrix is idempotent).
     */
    async *entries(batch = 500): AsyncGenerator<InFlightEntry> {
      for (const tenant of await redis.smembers(keys.tenants())) {
        let cursor = '0';
        do {
          const [next, rows] = await redis.zscan(keys.inFlight(tenant), cursor, 'COUNT', batch);
          cursor = next;
          for (let i = 0; i + 1 < rows.length; i += 2)
            yield { tenant, id: rows[i]!, sinceMs: Number(rows[i + 1]) };
        } while (cursor !== '0');
      }
    },
    /** The record's unsealed fields recovery needs, without opening the sealed ones. */
    async head(id: string): Promise<RunHead | null> {
      const [status, attempts, createdAt, mode] = await redis.hmget(
        keys.run(id),
        'status',
        'attempts',
        'createdAt',
        'mode',
      );
      if (status == null) return null;
      return {
        status: status as RunStatus,
        attempts: Number(attempts ?? 0),
        createdAt: Number(createdAt),
        mode: (mode ?? undefined) as SandboxMode | undefined,
      };
    },
    /** Removes an entry that is not in flight (the tenant gets its quota place back). */
    async drop(tenant: string, id: string): Promise<void> {
      await redis.zrem(keys.inFlight(tenant), id);
    },
  };
}

export type InFlightStore = ReturnType<typeof createInFlightStore>;
