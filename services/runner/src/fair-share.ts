/**
 * Fair share of a pool's slots between tenants (BullMQ OSS has no groups, so the runner enforces
 * it when it takes a job).
 *
 * Before a run or a skill executes, the runner takes a lease on one of its tenant's slots in the
 * pool (Lua, atomic across runners): allowed while the tenant holds fewer than
 * `max(1, floor(live pool slots × ISLET_TENANT_POOL_SHARE))` (and ISLET_TENANT_MAX_EXECUTING_PER_POOL
 * when set). Live pool slots = the sum over runners that registered in the last lease period. A job
 * over the share goes back to the queue as a delayed job (no attempt spent, the run record
 * untouched: it still has not started) and is remembered in the tenant's deferred set; when one
 * of the tenant's slots frees, the oldest deferred job is promoted at once, and every deferred job
 * also checks again after ISLET_TENANT_SHARE_RECHECK_MS in case that promotion was lost (a runner
 * killed in between). So nothing is lost, a tenant's own jobs keep their order, and another
 * tenant's job finds a free slot while one tenant floods.
 *
 * With a share of the whole pool and no cap, fair share is off: no lease is taken or released.
 *
 * Leases carry an expiry in Redis time and are renewed by a heartbeat every third of
 * ISLET_TENANT_SHARE_LEASE_MS; a SIGKILLed runner's leases (and its registered slots) lapse after
 * one lease period. A job taken over after a stall keeps its lease (the member is the job id).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type IsletConfig, keys, type Logger } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import type { SandboxMode } from '@islet/protocol';
import type { Redis } from 'ioredis';

const NOW_MS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// KEYS: pool slots, tenant leases, tenant deferred. ARGV: job id, share, absolute cap, lease ms.
// Returns { 1 | 0, limit }.
const ACQUIRE = new LuaScript(`${NOW_MS}
local total = 0
local rows = redis.call('HGETALL', KEYS[1])
for i = 1, #rows, 2 do
  local slots, exp = string.match(rows[i + 1], '^(%d+):(%d+)$')
  if slots and tonumber(exp) > now then total = total + tonumber(slots)
  else redis.call('HDEL', KEYS[1], rows[i]) end
end
local limit = math.floor(total * tonumber(ARGV[2]) + 1e-9)
local cap = tonumber(ARGV[3])
if cap > 0 and cap < limit then limit = cap end
if limit < 1 then limit = 1 end
local lease = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZSCORE', KEYS[2], ARGV[1]) or redis.call('ZCARD', KEYS[2]) < limit then
  redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], lease * 2)
  redis.call('ZREM', KEYS[3], ARGV[1])
  return { 1, limit }
end
redis.call('ZADD', KEYS[3], 'NX', now, ARGV[1])
redis.call('PEXPIRE', KEYS[3], 86400000)
return { 0, limit }
`);

// KEYS: tenant leases (or a dummy in the same slot), tenant deferred. ARGV: job id ('' = none).
// Ends the lease and pops the tenant's oldest deferred job id (false when none).
const RELEASE = new LuaScript(`
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if oldest then redis.call('ZREM', KEYS[2], oldest) end
return oldest
`);

// KEYS: tenant leases. ARGV: job id, lease ms. Renews only a lease that still exists.
const RENEW = new LuaScript(`${NOW_MS}
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
`);

// --- parking (run-slot.ts) ---
// KEYS: tenant leases, tenant deferred. ARGV: job id, lease ms. Takes the lease whatever the share:
// the run already started and has only been parked while it waited for an answer.
const RECLAIM = new LuaScript(`${NOW_MS}
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
redis.call('ZREM', KEYS[2], ARGV[1])
`);
// --- end parking ---

// KEYS: pool slots. ARGV: runner instance, slots, lease ms.
const REGISTER = new LuaScript(`${NOW_MS}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. (now + tonumber(ARGV[3])))
`);

export interface FairShareDeps {
  redis: Redis;
  config: Pick<
    IsletConfig,
    | 'ISLET_RUNNER_CONCURRENCY'
    | 'ISLET_RUNNER_NAME'
    | 'ISLET_TENANT_POOL_SHARE'
    | 'ISLET_TENANT_MAX_EXECUTING_PER_POOL'
    | 'ISLET_TENANT_SHARE_LEASE_MS'
  >;
  logger: Logger;
  /** Promotes a deferred job (false when it is no longer delayed: already running, removed, ended). */
  promote: (mode: SandboxMode, jobId: string) => Promise<boolean>;
}

export function createFairShare(deps: FairShareDeps) {
  const { redis, config, logger } = deps;
  const instance = `${config.ISLET_RUNNER_NAME ?? hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const leaseMs = config.ISLET_TENANT_SHARE_LEASE_MS;
  const held = new Map<string, { mode: SandboxMode; tenant: string; jobId: string }>();
  let modes: SandboxMode[] = [];
  let timer: NodeJS.Timeout | undefined;
  const heldKey = (mode: SandboxMode, jobId: string) => `${mode}\u0000${jobId}`;
  const off = config.ISLET_TENANT_POOL_SHARE >= 1 && !(config.ISLET_TENANT_MAX_EXECUTING_PER_POOL > 0);

  async function register() {
    for (const mode of modes)
      await REGISTER.run(redis, [keys.poolSlots(mode)], [instance, config.ISLET_RUNNER_CONCURRENCY, leaseMs]);
  }

  async function heartbeat() {
    try {
      await register();
      for (const l of held.values())
        await RENEW.run(redis, [keys.poolTenantLeases(l.mode, l.tenant)], [l.jobId, leaseMs]);
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'fair-share heartbeat failed');
    }
  }

  return {
    /** Registers this runner's slots for its modes and starts the heartbeat. */
    async start(serving: SandboxMode[]) {
      modes = serving;
      await register();
      timer = setInterval(() => void heartbeat(), Math.max(100, Math.floor(leaseMs / 3)));
      timer.unref();
    },

    /**
     * Takes a slot lease for the job; false when its tenant holds its share of the pool. With fair
     * share off (a share of the whole pool and no cap) there is nothing to hold a tenant to: no
     * lease, no Redis work (a script each way, about a sixth of a trivial run's Redis commands).
     */
    async acquire(mode: SandboxMode, tenant: string, jobId: string): Promise<{ ok: boolean; limit: number }> {
      if (off) return { ok: true, limit: Number.POSITIVE_INFINITY };
      // EVALSHA: the script's 40-byte hash instead of its source on every run.
      const [ok, limit] = (await ACQUIRE.run(
        redis,
        [keys.poolSlots(mode), keys.poolTenantLeases(mode, tenant), keys.poolTenantDeferred(mode, tenant)],
        [jobId, config.ISLET_TENANT_POOL_SHARE, config.ISLET_TENANT_MAX_EXECUTING_PER_POOL, leaseMs],
      )) as [number, number];
      if (ok === 1) held.set(heldKey(mode, jobId), { mode, tenant, jobId });
      return { ok: ok === 1, limit };
    },

    /** Gives the slot back and promotes the tenant's oldest deferred job (the next one if it is gone). */
    async release(mode: SandboxMode, tenant: string, jobId: string): Promise<void> {
      if (off) return;
      held.delete(heldKey(mode, jobId));
      try {
        // A popped job that is no longer delayed (it woke by itself, was cancelled) frees no one: try the next.
        for (let i = 0, release = jobId; i < 5; i++, release = '') {
          const oldest = (await RELEASE.run(
            redis,
            [keys.poolTenantLeases(mode, tenant), keys.poolTenantDeferred(mode, tenant)],
            [release],
          )) as string | null;
          if (!oldest || (await deps.promote(mode, oldest))) break;
        }
      } catch (err) {
        // The lease lapses by itself and deferred jobs re-check on their own: nothing is lost.
        logger.warn({ err: (err as Error).message, jobId }, 'fair-share release failed');
      }
    },

    /**
     * Parking: a parked run gives its lease back with `release` (a deferred job of its tenant may
     * take the slot) and takes it again here when its answer came, over the share if need be (it
     * has started; deferring it would only spend its budget). Its tenant's new jobs wait meanwhile.
     */
    async reclaim(mode: SandboxMode, tenant: string, jobId: string): Promise<void> {
      if (off) return;
      held.set(heldKey(mode, jobId), { mode, tenant, jobId });
      await RECLAIM.run(
        redis,
        [keys.poolTenantLeases(mode, tenant), keys.poolTenantDeferred(mode, tenant)],
        [jobId, leaseMs],
      );
    },

    async close() {
      if (timer) clearInterval(timer);
      await Promise.all(modes.map((m) => redis.hdel(keys.poolSlots(m), instance).catch(() => 0)));
    },
  };
}

export type FairShare = ReturnType<typeof createFairShare>;
