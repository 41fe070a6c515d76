-- releaseLease(k, a): ends a job's slot lease (a lease already ended: nothing to end, so a second
-- release only does what any release does) and, while the pool has a free slot, leases it to the
-- oldest deferred job of the next tenant in turn (under its share first; over it only when no other
-- tenant has queued work).
-- KEYS[k..k+4] pool slots, pool busy, pool queued, pool waiting, tenant leases (one slot:
--   `{pool:<mode>}`).
-- ARGV[a..a+4] job id ('' = none), share, absolute cap, lease ms, pool tenant key prefix.
-- `seen` (optional, a table): a waiting key this release reads empty is noted in it (`seen[key] =
--   true`), for an acquire later in the same script (includes/lease-acquire.lua), which then need
--   not read it again: only the composite `endCompleteStartScript` passes one, where nothing between
--   the two touches the pool's keys (BullMQ's completion and fetch in between know only the queue's).
--   Its `#at` (the run's end before, includes/finish-run.lua: its event's id) holds Redis's time, read already.
--   A waiting key already noted there when the release begins is known empty (the composite end
--   + completion asked it in one EXISTS with BullMQ's keys, nothing of the pool's written since,
--   lease-scripts.ts `endAndCompleteScript`): no ZCARD.
-- `givenUp` (optional): {tenant, back} when the lease released is a reservation given up untaken
--   (the runner's promote did not promote its job): `back` true (the job is still there) puts the
--   job back in its tenant's deferred set at its first score once the freed slot went on, false
--   (the job is gone) only forgets that score (includes/reserved-place.lua).
-- Returns { job id, tenant } for the caller to promote, else false.
-- The helpers (includes/pool-quota.lua, includes/reserved-place.lua and the grant) are made inside
-- it, past the common release's answer: Redis runs a script's body at every call, so a function
-- defined in it is made at each call, used or not (a closure and a lookup of each local it reads).
-- A release that gives up no reservation and finds no tenant waiting (every run's end while nothing
-- is deferred) makes none of them: 6 functions fewer a run's end (test/bench/README.md, round 50
-- `end-script`). The same commands in the same order on every path.
local function releaseLease(k, a, seen, givenUp)
  local slots, busy, queued, waitingKey = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local prefix = ARGV[a + 4]
  -- `waiting`: the waiting list is known not empty (read here, not noted in `seen`).
  local waiting = false
  if not givenUp then
    if ARGV[a] ~= '' then
      redis.call('ZREM', KEYS[k + 4], ARGV[a])
      redis.call('ZREM', busy, ARGV[a])
    end
    if (seen and seen[waitingKey]) or redis.call('ZCARD', waitingKey) == 0 then
      if seen then seen[waitingKey] = true end
      return false
    end
    waiting = true
  end
--- @include "pool-quota"
--- @include "reserved-place"
  -- Given up because its job is still active, but its place is no longer kept: its acquire took the
  -- reservation (the promote cannot tell a job refused and not yet moved from one running), so the
  -- lease is that running job's. Released, its tenant would run one job over its share and the job
  -- be deferred while it runs. A reservation an older release made keeps no place: it is left to
  -- lapse, as before that release's runners promoted anything.
  if givenUp and givenUp[2] and ARGV[a] ~= ''
    and not redis.call('ZSCORE', reservedKey(prefix .. givenUp[1] .. ':deferred'), ARGV[a]) then
    return false
  end
  if givenUp and ARGV[a] ~= '' then
    redis.call('ZREM', KEYS[k + 4], ARGV[a])
    redis.call('ZREM', busy, ARGV[a])
  end
  local function grant()
    if not waiting and ((seen and seen[waitingKey]) or redis.call('ZCARD', waitingKey) == 0) then
      if seen then seen[waitingKey] = true end
      return false
    end
    local cap, lease = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
    local at = seen and seen['#at']
    local now, total, quota = poolQuota(slots, tonumber(ARGV[a + 1]), cap, at and tonumber(string.match(at, '^%d+')))
    redis.call('ZREMRANGEBYSCORE', busy, '-inf', now)
    if redis.call('ZCARD', busy) >= total then return false end
    local pick, over
    for _, tenant in ipairs(redis.call('ZRANGE', waitingKey, 0, -1)) do
      local leases = prefix .. tenant .. ':leases'
      -- A lapsed reservation's job back to its first place (includes/reserved-place.lua): it is then
      -- this tenant's oldest, the one a grant below leases the slot to.
      if redis.call('ZREMRANGEBYSCORE', leases, '-inf', now) > 0 then
        putBackLapsed(leases, prefix .. tenant .. ':deferred', waitingKey, tenant, now)
      end
      local held = redis.call('ZCARD', leases)
      if held < quota then pick = tenant break end
      if not over and (cap <= 0 or held < cap) then over = tenant end
    end
    if not pick and over and redis.call('HLEN', queued) - redis.call('HEXISTS', queued, over) <= 0 then
      pick = over
    end
    if not pick then return false end
    local leases, deferred = prefix .. pick .. ':leases', prefix .. pick .. ':deferred'
    local first = redis.call('ZRANGE', deferred, 0, 0, 'WITHSCORES')
    local oldest = first[1]
    if oldest then
      redis.call('ZREM', deferred, oldest)
      redis.call('ZADD', leases, now + lease, oldest)
      redis.call('ZADD', busy, now + lease, oldest)
      keepPlace(deferred, oldest, first[2], leases)
    end
    if redis.call('ZCARD', deferred) == 0 then redis.call('ZREM', waitingKey, pick)
    else redis.call('ZADD', waitingKey, 'XX', now, pick) end
    if not oldest then return false end
    return { oldest, pick }
  end
  local given = grant()
  -- After the grant, so the freed slot goes to the next job in line, not straight back to the one
  -- whose promote just failed (still active: its runner's move to delayed has not landed).
  if givenUp and ARGV[a] ~= '' then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    putBack(prefix .. givenUp[1] .. ':deferred', waitingKey, givenUp[1], ARGV[a], now, givenUp[2])
  end
  return given
end
