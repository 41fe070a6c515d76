-- acquireLease(k, a): a job's slot lease in its pool under the fair share (the runner's
-- fair-share.ts describes the decisions). Writes nothing of a run.
-- KEYS[k..k+5] pool slots, pool busy, pool queued, pool waiting, tenant leases, tenant deferred
--   (one slot: `{pool:<mode>}`).
-- ARGV[a..a+4] job id, tenant, share, absolute cap, lease ms.
-- `seen` (optional): waiting keys a release earlier in the same script read empty
--   (includes/lease-release.lua); such a key is known empty without reading it. Its `#at` (an event id): the
--   time (Redis's, ms) a run's end earlier in the same script stamped on its event
--   (includes/finish-run.lua), taken as `now` when none is given.
-- `now` (optional): Redis's time in ms as the calling script read it already (the hand-off's add,
--   handoff-scripts.ts), else read here.
-- `uncounted` (optional): {job = id} of a job not in the pool's queued counts (the hand-off's add
--   held its admission's count back: counted and taken off in one script, the two writes cancel);
--   its pick-up takes no count off, and `decided` is set on it once this acquire ran for that job.
-- Returns { 1 | 0, quota[, job id whose reservation the caller must promote] }; quota is 0 on a grant
--   that did not need the pool's size (alone, or a reservation): only a deferral reports it.
-- The pool's helpers (includes/pool-quota.lua, includes/reserved-place.lua) are made by `poolPlace`,
-- called only on the paths that use them (a lapsed lease, a reservation, a tenant with company, an
-- older deferred job, a deferral): Redis runs a script's body at every call, so a function defined
-- in it is made at each call, used or not, with a lookup of each local it reads. A tenant alone
-- with nothing deferred (every pick-up while nothing waits) makes one function where it made five
-- (~3 K instructions a start; test/bench/README.md round 52 `submit-lean`).
local function poolPlace()
--- @include "pool-quota"
--- @include "reserved-place"
  return poolQuota, reservedKey, keepPlace, putBackLapsed
end
-- No function is made inside it: a nested function made at every call, and each local it reads
-- looked up in Redis's Lua (`luaF_findupval`, ~210 instructions) and closed again, cost more than
-- its body (seven of them, 36 such lookups a call; test/bench/README.md round 48
-- `submit-closures`): each helper once used is written where it is used, and the lease's ZADDs
-- (`take`) where a slot is taken.
local function acquireLease(k, a, seen, now, uncounted)
  local poolQuota, reservedKey, keepPlace, putBackLapsed
  local slots, busy, queued, waitingKey = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local leases, deferred = KEYS[k + 4], KEYS[k + 5]
  local job, tenant = ARGV[a], ARGV[a + 1]
  -- The share is read (`tonumber`: strtod, ~1.1 K instructions) only where the pool's quota is; a cap
  -- of '0' (none: the default) is 0 without it (round 52 `submit-lean`).
  local cap, lease = ARGV[a + 3], tonumber(ARGV[a + 4])
  if cap == '0' then cap = 0 else cap = tonumber(cap) end
  if not now and seen and seen['#at'] then now = tonumber(string.match(seen['#at'], '^%d+')) end
  local clock
  if not now then
    clock = redis.call('TIME')
    now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  end
  -- The pool's size (its registrations) is read only when it decides: a tenant alone is granted
  -- whatever the pool's count (below), so its common start skips this read and the busy count.
  local total, quota
  -- The tenant's leases with their expiries, read once: this job's reservation, the live count the
  -- share compares, whether another live lease keeps the key alive, and lapsed ones to drop.
  -- (Numbers an argument takes are written as text here: Redis prints a Lua number with libc's
  -- float printer, ~2-4 K instructions each; test/bench/README.md, round 35, `submit-lua`.)
  local rows = redis.call('ZRANGE', leases, '0', '-1', 'WITHSCORES')
  local reserved, live, lapsed = false, 0, false
  for i = 1, #rows, 2 do
    if rows[i] == job then reserved = true
    elseif tonumber(rows[i + 1]) > now then live = live + 1
    else lapsed = true end
  end
  -- A lapsed lease (a SIGKILLed runner's) is dropped as soon as it is seen; a lapsed reservation's
  -- job goes back to its first place in the deferred set (includes/reserved-place.lua).
  if lapsed then
    redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
    if not poolQuota then poolQuota, reservedKey, keepPlace, putBackLapsed = poolPlace() end
    putBackLapsed(leases, deferred, waitingKey, tenant, now)
  end
  -- The key's expiry comes from its holders' heartbeats (every third of a lease). Set here only when
  -- the key held a dead runner's lapsed leases alone: a key with another live lease is kept by that
  -- lease's holder, and a key this lease creates gets one from its own heartbeat, or its release
  -- deletes it.
  local fresh = live == 0 and #rows > 0
  -- A slot taken (`take`, wherever one is): the lease and the pool's busy entry, both at the lease's
  -- expiry, a whole number printed once for both ZADDs as Redis prints it (its digits); the leases
  -- key given an expiry when `fresh`.
  local expiry = now + lease
  local whole = expiry == math.floor(expiry) and math.abs(expiry) < 2 ^ 52
  -- Whether this tenant is in the pool's waiting list (read below, before any deferral).
  local mineListed, othersDeferred = false, false
  -- A reservation made for this job by a release, or a stalled job taken over: it keeps its slot.
  if reserved then
    -- take(job), not fresh
    local at = whole and string.format('%d', expiry) or expiry
    redis.call('ZADD', leases, at, job)
    redis.call('ZADD', busy, at, job)
    if not poolQuota then poolQuota, reservedKey, keepPlace, putBackLapsed = poolPlace() end
    redis.call('ZREM', reservedKey(deferred), job)
    -- the tenant unlisted when its deferred set is left empty
    if redis.call('ZREM', deferred, job) == 1 and redis.call('ZCARD', deferred) == 0 then
      redis.call('ZREM', waitingKey, tenant)
    end
    return { 1, 0 }
  end
  -- The tenants with deferred jobs, as far as they decide: a tenant with a deferred job is always
  -- listed (every script that empties its deferred set unlists it after, never before), so an
  -- empty list answers for this tenant's order and for the others at once.
  local listed = {}
  if not (seen and seen[waitingKey]) then listed = redis.call('ZRANGE', waitingKey, '0', '1') end
  for _, t in ipairs(listed) do
    if t == tenant then mineListed = true else othersDeferred = true end
  end
  if #listed == 2 and not mineListed then mineListed = redis.call('ZSCORE', waitingKey, tenant) ~= false end
  local oldest, oldestAt
  if mineListed then
    local first = redis.call('ZRANGE', deferred, '0', '0', 'WITHSCORES')
    oldest, oldestAt = first[1], first[2]
  end
  -- Picked up from the queue: no longer queued (a deferred job woken by its recheck was counted
  -- then); the count is taken off below, after the decision (which reads the counts as they were).
  local counted
  if uncounted and uncounted.job == job then
    counted = false
    uncounted.decided = true
  else
    counted = not oldest or (oldest ~= job and not redis.call('ZSCORE', deferred, job))
  end
  -- Work-conserving: at or past its share, or in a pool seen full, a tenant is held back only while
  -- another one waits. Alone, the slot it runs in is its runner's own (a runner picks a job up only
  -- into a free slot of its own), so a full count of busy members (a reservation whose job is not
  -- taken yet, a lease given back late) holds no one else's slot: deferring would only start a
  -- chain (each later pick-up deferred behind the one before, see test/bench/README.md, round 20).
  -- So whether it is alone is asked first (the waiting list is read already; the queued counts are
  -- one sample), and only a tenant with company reads the pool's size and busy count: the same
  -- answer as `under its share in a pool not full, or alone`, in fewer reads.
  local ok, alone
  -- From the queued counts' sample: this tenant's count (`mine`) and whether it is known.
  local mine, known
  if cap > 0 and live >= cap then ok = false
  else
    -- Whether another tenant has work waiting: deferred (read above), else queued (the gateway's
    -- counts): a sample of two fields of the queued hash (all of a hash of two or fewer) holds
    -- another tenant's whenever there is one, and this tenant's count when it is all of the hash or
    -- sampled.
    local others = othersDeferred
    if not others then
      local sample = redis.call('HRANDFIELD', queued, '2', 'WITHVALUES')
      for i = 1, #sample, 2 do
        if sample[i] == tenant then mine = tonumber(sample[i + 1]) else others = true end
      end
      known = mine ~= nil or #sample < 4
    end
    alone = not others
    ok = alone
    if not ok then
      -- Lapsed busy slots (a SIGKILLed runner's) are dropped only when they could make the answer no.
      if not poolQuota then poolQuota, reservedKey, keepPlace, putBackLapsed = poolPlace() end
      total, quota = select(2, poolQuota(slots, tonumber(ARGV[a + 2]), cap, now))
      local n = redis.call('ZCARD', busy)
      if n >= total then
        redis.call('ZREMRANGEBYSCORE', busy, '-inf', now)
        n = redis.call('ZCARD', busy)
      end
      ok = n < total and live < quota
    end
  end
  -- The pick-up's count taken off: from the count sampled, one write (none when it had none); else
  -- as the gateway does it (a count left at 0 or below is deleted).
  if counted then
    if known then
      if mine ~= nil then
        if mine > 1 then redis.call('HINCRBY', queued, tenant, -1)
        else redis.call('HDEL', queued, tenant) end
      end
    elseif redis.call('HINCRBY', queued, tenant, -1) <= 0 then
      redis.call('HDEL', queued, tenant)
    end
  end
  -- An older deferred job of this tenant granted the slot in this one's stead (then this one is
  -- deferred too, unless it runs beside it).
  local promoted
  if ok and oldest and oldest ~= job then
    -- take(oldest)
    local at = whole and string.format('%d', expiry) or expiry
    redis.call('ZADD', leases, at, oldest)
    if fresh then redis.call('PEXPIRE', leases, lease * 2) end
    redis.call('ZADD', busy, at, oldest)
    redis.call('ZREM', deferred, oldest)
    if not poolQuota then poolQuota, reservedKey, keepPlace, putBackLapsed = poolPlace() end
    keepPlace(deferred, oldest, oldestAt, leases)
    -- Alone (and under its cap with both), the older job keeps its slot and this one runs too: no
    -- deferral follows from the one before, and nobody else waits for either slot.
    if alone and (cap <= 0 or live + 2 <= cap) then
      -- take(job), not fresh
      redis.call('ZADD', leases, at, job)
      redis.call('ZADD', busy, at, job)
      redis.call('ZREM', deferred, job)
      if redis.call('ZCARD', deferred) == 0 then redis.call('ZREM', waitingKey, tenant) end
      return { 1, quota or 0, oldest }
    end
    promoted, ok = oldest, false
  end
  if not ok then
    -- Deferred: its place in its tenant's line is Redis's time in ms with the microseconds as three
    -- decimals, so jobs deferred in the same ms keep the order their scripts ran in (their fetches':
    -- the queue's) instead of their ids' text order ("r-100" before "r-99"; run ids: at random).
    -- Still a time in ms, as an older release writes it (test/bench/README.md, round 26,
    -- `fair-tie`). Written as text: Lua prints a number with 14 digits, which drops them. Redis
    -- keeps the nearest double, 2^-12 ms apart below 2^41 ms (2039), so distinct microseconds stay
    -- distinct and in order up to 2^43 ms. NX keeps a job's first place when it is deferred again
    -- while still in the set (its recheck; a fetch of it before its promotion).
    local t = clock or redis.call('TIME')
    local us = tonumber(t[2])
    redis.call('ZADD', deferred, 'NX', string.format('%s%03d.%03d', t[1], math.floor(us / 1000), us % 1000), job)
    redis.call('PEXPIRE', deferred, 86400000)
    -- Listed already (read above), the NX would write nothing: skipped, which pays for the TIME a
    -- deferral reads when its caller gave the time in whole ms (the end's, the hand-off's).
    if not mineListed then redis.call('ZADD', waitingKey, 'NX', now, tenant) end
    -- A deferral reports the pool's quota (read here when the decision did not).
    if not total then
      if not poolQuota then poolQuota, reservedKey, keepPlace, putBackLapsed = poolPlace() end
      total, quota = select(2, poolQuota(slots, tonumber(ARGV[a + 2]), cap, now))
    end
    if promoted then return { 0, quota, promoted } end
    return { 0, quota }
  end
  -- take(job)
  local at = whole and string.format('%d', expiry) or expiry
  redis.call('ZADD', leases, at, job)
  if fresh then redis.call('PEXPIRE', leases, lease * 2) end
  redis.call('ZADD', busy, at, job)
  if oldest then
    redis.call('ZREM', deferred, job)
    if redis.call('ZCARD', deferred) == 0 then redis.call('ZREM', waitingKey, tenant) end
  end
  return { 1, quota or 0 }
end
