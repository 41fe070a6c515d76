-- acquireLease(k, a): a job's slot lease in its pool under the fair share (the runner's
-- fair-share.ts describes the decisions). Writes nothing of a run.
-- KEYS[k..k+5] pool slots, pool busy, pool queued, pool waiting, tenant leases, tenant deferred
--   (one slot: `{pool:<mode>}`).
-- ARGV[a..a+4] job id, tenant, share, absolute cap, lease ms.
-- Returns { 1 | 0, quota[, job id whose reservation the caller must promote] }.
--- @include "pool-quota"
local function acquireLease(k, a)
  local slots, busy, queued, waitingKey = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local leases, deferred = KEYS[k + 4], KEYS[k + 5]
  local job, tenant = ARGV[a], ARGV[a + 1]
  local share, cap, lease = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local now, total, quota = poolQuota(slots, share, cap)
  -- A new key gets its expiry here; while it holds leases the heartbeat's renewals extend it.
  local function take(id, fresh)
    redis.call('ZADD', leases, now + lease, id)
    if fresh then redis.call('PEXPIRE', leases, lease * 2) end
    redis.call('ZADD', busy, now + lease, id)
  end
  local function defer()
    redis.call('ZADD', deferred, 'NX', now, job)
    redis.call('PEXPIRE', deferred, 86400000)
    redis.call('ZADD', waitingKey, 'NX', now, tenant)
  end
  local function unlisted()
    if redis.call('ZCARD', deferred) == 0 then redis.call('ZREM', waitingKey, tenant) end
  end
  -- A reservation made for this job by a release, or a stalled job taken over: it keeps its slot.
  if redis.call('ZSCORE', leases, job) then
    take(job, false)
    if redis.call('ZREM', deferred, job) == 1 then unlisted() end
    return { 1, quota }
  end
  local oldest = redis.call('ZRANGE', deferred, 0, 0)[1]
  -- Picked up from the queue: no longer queued (a deferred job woken by its recheck was counted
  -- then). mine: the tenant's queued count left, when counted here.
  local mine
  if not oldest or not redis.call('ZSCORE', deferred, job) then
    mine = redis.call('HINCRBY', queued, tenant, -1)
    if mine <= 0 then redis.call('HDEL', queued, tenant) end
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
    local n = redis.call('HLEN', queued)
    if n > 0 then
      if mine == nil then n = n - redis.call('HEXISTS', queued, tenant)
      elseif mine > 0 then n = n - 1 end
    end
    if n > 0 then return true end
    n = redis.call('ZCARD', waitingKey)
    if n > 0 and redis.call('ZSCORE', waitingKey, tenant) then n = n - 1 end
    return n > 0
  end
  -- The tenant's leases, lapsed ones included: at its share they are counted live only when that
  -- decides (a cap, or another tenant waiting). Left uncounted, the key may hold only lapsed leases
  -- and be close to its expiry, so this lease sets it again (fresh).
  local held = redis.call('ZCARD', leases)
  local fresh = held == 0
  local ok = live(busy, total) < total
  if ok and held >= quota then
    local waiting
    if cap <= 0 then
      waiting = othersWait()
      if not waiting then fresh = true end
    end
    if cap > 0 or waiting then
      redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
      held = redis.call('ZCARD', leases)
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
    redis.call('ZREM', deferred, oldest)
    defer()
    return { 0, quota, oldest }
  end
  take(job, fresh)
  if oldest then
    redis.call('ZREM', deferred, job)
    unlisted()
  end
  return { 1, quota }
end
