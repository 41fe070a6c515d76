/**
 * Fair share of a pool's slots between tenants (BullMQ OSS has no groups, so the runner enforces
 * it when it takes a job). Work-conserving: a tenant may use every free slot while no other tenant
 * has work waiting in the pool; under contention it holds at most
 * `max(1, floor(live pool slots × ISLET_TENANT_POOL_SHARE))` (and ISLET_TENANT_MAX_EXECUTING_PER_POOL
 * when set, always), and freed slots go round robin to the tenants with deferred jobs, those under
 * their share first. Live pool slots = the sum over runners that registered in the last lease period.
 *
 * Before a run or a skill executes, the runner takes a lease on a slot (Lua, atomic across
 * runners). "Waiting work" is known in two places, both in the pool's hash slot: the gateway counts
 * each enqueue per tenant (`poolQueued`, @islet/runs pool-demand.ts) and the acquire counts the
 * pick-up, so a quiet tenant's job queued behind another's flood is seen before a runner reaches
 * it; and the tenants with deferred jobs (`poolWaiting`). A job that may not run now goes back to
 * the queue as a delayed job (no attempt spent, the run record untouched: it still has not started,
 * and the operator counts delayed jobs as demand) and into its tenant's deferred set; the flooding
 * tenant's jobs are moved aside this way, so the runners reach the quiet tenant's job at once. When
 * a slot frees, the release picks the next tenant in turn, leases the slot to its oldest deferred
 * job (a reservation: that job is granted when a runner takes it) and promotes it. Every deferred
 * job also checks again after ISLET_TENANT_SHARE_RECHECK_MS in case that promotion was lost (a
 * runner killed in between). A tenant's own order is kept: a job granted while its tenant has
 * older deferred jobs gives its slot to the oldest of them and waits behind it.
 *
 * The queued counts drift only when a queued job leaves without a pick-up and without the
 * gateway taking its count back (cancels and refused submits do), or when on Cluster a count
 * arrives after its job was taken; a drifted count only makes the pool
 * behave as under contention (the share), and the heartbeat clears the counts whenever the mode's
 * queue has nothing waiting.
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

// Live pool slots (dropping lapsed registrations) and the share under contention. Needs KEYS[1]
// (the pool's slots) and the locals share and cap.
const POOL = `
local total = 0
local rows = redis.call('HGETALL', KEYS[1])
for i = 1, #rows, 2 do
  local slots, exp = string.match(rows[i + 1], '^(%d+):(%d+)$')
  if slots and tonumber(exp) > now then total = total + tonumber(slots)
  else redis.call('HDEL', KEYS[1], rows[i]) end
end
if total < 1 then total = 1 end
local quota = math.floor(total * share + 1e-9)
if quota < 1 then quota = 1 end
if cap > 0 and cap < quota then quota = cap end
`;

// KEYS: pool slots, pool busy, pool queued, pool waiting, tenant leases, tenant deferred.
// ARGV: job id, tenant, share, absolute cap, lease ms.
// Returns { 1 | 0, quota[, job id whose reservation the caller must promote] }.
const ACQUIRE = new LuaScript(`${NOW_MS}
local job, tenant = ARGV[1], ARGV[2]
local share, cap, lease = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
${POOL}
-- A new key gets its expiry here; while it holds leases the heartbeat's renewals extend it.
local function take(id, fresh)
  redis.call('ZADD', KEYS[5], now + lease, id)
  if fresh then redis.call('PEXPIRE', KEYS[5], lease * 2) end
  redis.call('ZADD', KEYS[2], now + lease, id)
end
local function defer()
  redis.call('ZADD', KEYS[6], 'NX', now, job)
  redis.call('PEXPIRE', KEYS[6], 86400000)
  redis.call('ZADD', KEYS[4], 'NX', now, tenant)
end
local function unlisted()
  if redis.call('ZCARD', KEYS[6]) == 0 then redis.call('ZREM', KEYS[4], tenant) end
end
-- A reservation made for this job by a release, or a stalled job taken over: it keeps its slot.
if redis.call('ZSCORE', KEYS[5], job) then
  take(job, false)
  if redis.call('ZREM', KEYS[6], job) == 1 then unlisted() end
  return { 1, quota }
end
local oldest = redis.call('ZRANGE', KEYS[6], 0, 0)[1]
-- Picked up from the queue: no longer queued (a deferred job woken by its recheck was counted then).
-- mine: the tenant's queued count left, when counted here.
local mine
if not oldest or not redis.call('ZSCORE', KEYS[6], job) then
  mine = redis.call('HINCRBY', KEYS[3], tenant, -1)
  if mine <= 0 then redis.call('HDEL', KEYS[3], tenant) end
end
-- Lapsed leases (a SIGKILLed runner's) are dropped only when they could make the answer no.
local function live(key, bound)
  local n = redis.call('ZCARD', key)
  if n < bound then return n end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key)
end
-- Whether another tenant has work waiting: queued (the gateway's counts), else deferred.
local function othersWait()
  local n = redis.call('HLEN', KEYS[3])
  if n > 0 then
    if mine == nil then n = n - redis.call('HEXISTS', KEYS[3], tenant)
    elseif mine > 0 then n = n - 1 end
  end
  if n > 0 then return true end
  n = redis.call('ZCARD', KEYS[4])
  if n > 0 and redis.call('ZSCORE', KEYS[4], tenant) then n = n - 1 end
  return n > 0
end
-- The tenant's leases, lapsed ones included: at its share they are counted live only when that
-- decides (a cap, or another tenant waiting). Left uncounted, the key may hold only lapsed leases
-- and be close to its expiry, so this lease sets it again (fresh).
local held = redis.call('ZCARD', KEYS[5])
local fresh = held == 0
local ok = live(KEYS[2], total) < total
if ok and held >= quota then
  local waiting
  if cap <= 0 then
    waiting = othersWait()
    if not waiting then fresh = true end
  end
  if cap > 0 or waiting then
    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
    held = redis.call('ZCARD', KEYS[5])
    fresh = held == 0
    if cap > 0 and held >= cap then ok = false
    elseif held >= quota then
      if waiting == nil then waiting = othersWait() end
      ok = not waiting
    end
  end
end
if not ok then
  defer()
  return { 0, quota }
end
if oldest and oldest ~= job then
  take(oldest, fresh)
  redis.call('ZREM', KEYS[6], oldest)
  defer()
  return { 0, quota, oldest }
end
take(job, fresh)
if oldest then
  redis.call('ZREM', KEYS[6], job)
  unlisted()
end
return { 1, quota }
`);

// KEYS: pool slots, pool busy, pool queued, pool waiting, tenant leases.
// ARGV: job id ('' = none), share, absolute cap, lease ms, pool tenant key prefix.
// Ends the lease; while the pool has a free slot, leases it to the oldest deferred job of the next
// tenant in turn (under its share first; over it only when no other tenant has queued work) and
// returns { job id, tenant } for the caller to promote, else false.
const RELEASE = new LuaScript(`
if ARGV[1] ~= '' then
  redis.call('ZREM', KEYS[5], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
if redis.call('ZCARD', KEYS[4]) == 0 then return false end
${NOW_MS}
local share, cap, lease, prefix = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
${POOL}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= total then return false end
local pick, over
for _, tenant in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local leases = prefix .. tenant .. ':leases'
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  local held = redis.call('ZCARD', leases)
  if held < quota then pick = tenant break end
  if not over and (cap <= 0 or held < cap) then over = tenant end
end
if not pick and over and redis.call('HLEN', KEYS[3]) - redis.call('HEXISTS', KEYS[3], over) <= 0 then
  pick = over
end
if not pick then return false end
local leases, deferred = prefix .. pick .. ':leases', prefix .. pick .. ':deferred'
local oldest = redis.call('ZRANGE', deferred, 0, 0)[1]
if oldest then
  redis.call('ZREM', deferred, oldest)
  redis.call('ZADD', leases, now + lease, oldest)
  redis.call('PEXPIRE', leases, lease * 2)
  redis.call('ZADD', KEYS[2], now + lease, oldest)
end
if redis.call('ZCARD', deferred) == 0 then redis.call('ZREM', KEYS[4], pick)
else redis.call('ZADD', KEYS[4], 'XX', now, pick) end
if not oldest then return false end
return { oldest, pick }
`);

// KEYS: tenant leases, pool busy. ARGV: job id, lease ms. Renews only a lease that still exists.
const RENEW = new LuaScript(`${NOW_MS}
local exp = now + tonumber(ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], exp, ARGV[1])
  redis.call('ZADD', KEYS[2], exp, ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
`);

// --- parking (run-slot.ts) ---
// KEYS: tenant leases, tenant deferred, pool busy. ARGV: job id, lease ms. Takes the lease (and
// its place among the pool's busy slots) whatever the share: the run already started and was only
// parked while it waited for an answer; it holds one of its runner's slots again.
const RECLAIM = new LuaScript(`${NOW_MS}
local exp = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], exp, ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], exp, ARGV[1])
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
  /**
   * Promotes a deferred job a slot was leased to: true when it will run (promoted, or already
   * back in the queue), false when it is gone (removed, ended): its slot is then given on.
   */
  promote: (mode: SandboxMode, jobId: string) => Promise<boolean>;
  /** Jobs waiting in the mode's queue (heals the queued counts when none wait); omitted: never healed. */
  queuedJobs?: (mode: SandboxMode) => Promise<number>;
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
  const share = config.ISLET_TENANT_POOL_SHARE;
  const cap = config.ISLET_TENANT_MAX_EXECUTING_PER_POOL;

  async function register() {
    for (const mode of modes)
      await REGISTER.run(redis, [keys.poolSlots(mode)], [instance, config.ISLET_RUNNER_CONCURRENCY, leaseMs]);
  }

  async function healQueued() {
    if (!deps.queuedJobs) return;
    for (const mode of modes)
      if ((await deps.queuedJobs(mode)) === 0 && (await redis.hlen(keys.poolQueued(mode))) > 0)
        await redis.del(keys.poolQueued(mode));
  }

  async function heartbeat() {
    try {
      await register();
      for (const l of held.values())
        await RENEW.run(
          redis,
          [keys.poolTenantLeases(l.mode, l.tenant), keys.poolBusy(l.mode)],
          [l.jobId, leaseMs],
        );
      await healQueued();
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'fair-share heartbeat failed');
    }
  }

  /**
   * Ends a lease (jobId '' = none) and promotes the job the freed slot went to; a promoted job
   * that is gone gives the slot on to the next one.
   */
  async function giveOn(mode: SandboxMode, tenant: string, jobId: string): Promise<void> {
    for (let i = 0, t = tenant, release = jobId; i < 5; i++) {
      const next = (await RELEASE.run(
        redis,
        [
          keys.poolSlots(mode),
          keys.poolBusy(mode),
          keys.poolQueued(mode),
          keys.poolWaiting(mode),
          keys.poolTenantLeases(mode, t),
        ],
        [release, share, cap, leaseMs, keys.poolTenantPrefix(mode)],
      )) as [string, string] | null;
      if (!next || (await deps.promote(mode, next[0]))) return;
      [release, t] = next;
    }
  }

  return {
    /** Registers this runner's slots for its modes and starts the heartbeat. */
    async start(serving: SandboxMode[]) {
      modes = serving;
      if (off) return;
      await register();
      timer = setInterval(() => void heartbeat(), Math.max(100, Math.floor(leaseMs / 3)));
      timer.unref();
    },

    /** Whether the gateway's enqueues must be counted (fair share on). */
    off,

    /**
     * Takes a slot lease for the job; false when the job must wait (its tenant holds its share
     * while others wait, the pool is full, or its tenant's older deferred job gets the slot, which
     * is then promoted here). With fair share off there is nothing to hold a tenant to: no lease,
     * no Redis work.
     */
    async acquire(mode: SandboxMode, tenant: string, jobId: string): Promise<{ ok: boolean; limit: number }> {
      if (off) return { ok: true, limit: Number.POSITIVE_INFINITY };
      // EVALSHA: the script's 40-byte hash instead of its source on every run.
      const [ok, limit, swapped] = (await ACQUIRE.run(
        redis,
        [
          keys.poolSlots(mode),
          keys.poolBusy(mode),
          keys.poolQueued(mode),
          keys.poolWaiting(mode),
          keys.poolTenantLeases(mode, tenant),
          keys.poolTenantDeferred(mode, tenant),
        ],
        [jobId, tenant, share, cap, leaseMs],
      )) as [number, number, string | undefined];
      if (ok === 1) held.set(heldKey(mode, jobId), { mode, tenant, jobId });
      if (swapped)
        void (async () => {
          if (!(await deps.promote(mode, swapped))) await giveOn(mode, tenant, swapped);
        })().catch((err: Error) =>
          logger.warn({ err: err.message, jobId: swapped }, 'fair-share promote failed'),
        );
      return { ok: ok === 1, limit };
    },

    /** Gives the slot back; the pool's next deferred job in turn gets it. */
    async release(mode: SandboxMode, tenant: string, jobId: string): Promise<void> {
      if (off) return;
      held.delete(heldKey(mode, jobId));
      try {
        await giveOn(mode, tenant, jobId);
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
        [keys.poolTenantLeases(mode, tenant), keys.poolTenantDeferred(mode, tenant), keys.poolBusy(mode)],
        [jobId, leaseMs],
      );
    },

    async close() {
      if (timer) clearInterval(timer);
      if (off) return;
      await Promise.all(modes.map((m) => redis.hdel(keys.poolSlots(m), instance).catch(() => 0)));
    },
  };
}

export type FairShare = ReturnType<typeof createFairShare>;
