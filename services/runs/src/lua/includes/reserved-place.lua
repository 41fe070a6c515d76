-- A reserved job's place in its tenant's order (keys.ts `poolTenantReserved`): a release or a swap
-- that leases a slot to a tenant's oldest deferred job takes it out of the deferred set (the next
-- release must pick the next one), and keeps its score here until the reservation is taken (the
-- job's acquire) or given up. Given up untaken — its promote found the job still active, or the
-- lease lapsed (its runner died before the promote, or the job was not fetched within a lease) —
-- the job goes back into the deferred set with that score: first in its tenant's line again, not
-- behind the jobs deferred since (a new deferral's score; test/bench/README.md, round 27,
-- `fair-order`). The key is derived from the deferred set's (the same tenant, the same hash tag).
local function reservedKey(deferred)
  return string.sub(deferred, 1, -10) .. ':reserved'
end

-- A reservation made for `id`, whose deferred score was `at`, its lease just added to `leases`. The
-- leases key then lives as long as the kept score (a day): a lapse is seen only in that key (the
-- tenant's next acquire, a release's walk over the waiting tenants), and with the key's usual two
-- lease periods a reservation whose runner died before its promote lapsed unseen when no live lease
-- of its tenant renewed the key, its job's place lost to the tenant's younger deferred jobs (round
-- 28, `fair-edges`). A lease's renewal (fair-share.ts) never shortens it; the key goes when empty.
local function keepPlace(deferred, id, at, leases)
  local kept = reservedKey(deferred)
  redis.call('ZADD', kept, at, id)
  redis.call('PEXPIRE', kept, 86400000)
  redis.call('PEXPIRE', leases, 86400000)
end

-- A reservation given up untaken: `id` back in its tenant's deferred set at its kept score (NX: a
-- deferral of it since keeps the earlier of the two only if it is already there; the kept one is
-- older) and the tenant listed among those waiting. `back` false (the job is gone): only forgotten.
-- Returns whether it went back.
local function putBack(deferred, waitingKey, tenant, id, now, back)
  local kept = reservedKey(deferred)
  local at = redis.call('ZSCORE', kept, id)
  if not at then return false end
  redis.call('ZREM', kept, id)
  if not back then return false end
  redis.call('ZADD', deferred, 'LT', at, id)
  redis.call('PEXPIRE', deferred, 86400000)
  redis.call('ZADD', waitingKey, 'NX', now, tenant)
  return true
end

-- Lapsed leases just dropped from a tenant's leases (`leases`, already without them): those that
-- were reservations go back to the deferred set. Called only when a lapse was seen (rare: a dead
-- runner's leases), so the common path pays nothing.
local function putBackLapsed(leases, deferred, waitingKey, tenant, now)
  local kept = reservedKey(deferred)
  local rows = redis.call('ZRANGE', kept, 0, -1)
  for _, id in ipairs(rows) do
    if not redis.call('ZSCORE', leases, id) then putBack(deferred, waitingKey, tenant, id, now, true) end
  end
end
