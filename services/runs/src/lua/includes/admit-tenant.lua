-- The tenant half of an admitted create (a flood of parallel submits cannot pass the quota between
-- a count and an add). KEYS[1..6]: inflight, session runs, skills, session owner, idempotency key,
-- the tenant's rate-limit window. ARGV[1..8]: runId, createdAt, maxInFlight, principal,
-- sessionTtlSeconds, nowMs, checkIdempotency ('1'|'0'), rateLimit ('' = the request was counted
-- already).
-- The tenant's stored bytes are read first (KEYS[13..21] against ARGV[19], bytes; '' = no share:
-- the counters not read; tenant-bytes-store.ts: the sum of the counters of its buckets that may still
-- hold live data): a tenant holding its share is refused with that ('over-storage <bytes>') before
-- anything else, its request still counted.
-- With a rate limit the request is counted, in the counter the gateway's own counts use
-- (countInWindowLua), and refused past the limit before the checks that follow. With the check, the
-- Idempotency-Key must still name this run (a retry may have taken it over from a request presumed
-- dead: idem-take-over). The session goes to its first principal (refreshed for it); the quota
-- counts runs not ended plus skills whose reservation is live.
-- The owner's refresh stands for `fresh` seconds (core's ownerFreshLua, session-store.ts): it sets the
-- owner's expiry `fresh` past the session's retention and a marker (`<owner>:fresh`) that lives
-- `fresh` seconds, and a create that reads the marker writes nothing of the owner. Every create
-- still leaves the owner at least the retention to live, at most `fresh` more; a busy session's
-- creates send one command less each (the EXPIRE every create sent).
-- The same MGET reads the session's owner and its fresh marker, the Idempotency-Key (with the check), whether a skill's
-- reservation may be live (`<skills>:live`: without it the quota does not count them) and whether an
-- events stream listens to the tenant's feed (KEYS[12] .. ':listeners') and to the session's runs
-- (KEYS[2] .. ':listeners'): markers the gateway sets before such a stream subscribes
-- (stream-listeners-store.ts), so a create nobody listens to publishes nothing.
-- Returns nil (admitted: in-flight and session index written) or the refusal: 'over-storage
-- <bytes>', 'rate-limited', 'superseded', 'session-taken' or 'over-quota'; admitted, also whether
-- the session's owner key already named the principal (includes/index-create.lua's `owned`) and
-- `heard`: what the MGET read, {feed marker, session marker, owner, skills' marker, owner's fresh
-- marker, idempotency} (false: none; after them, with a share, the counters' values).
-- One MGET reads the markers, owner and key first, then the counters: its answer is `heard` itself
-- (a reader of `heard` reads 1..6 only, and 6 only with the check), not copied out of a table of the
-- names and one of the values, both grown element by element (a helper's, made at every call:
-- ~18 K of a submit's ~810 K instructions, test/bench/README.md round 49 `submit-lean`).
--- @include "in-flight"
local function admitTenant()
  local overStorage, heard
  local limit, checked = ARGV[19], ARGV[7] == '1'
  if limit == '' and checked then
    heard = redis.call('MGET', KEYS[12] .. ':listeners', KEYS[2] .. ':listeners', KEYS[4], KEYS[3] .. ':live',
      KEYS[4] .. ':fresh', KEYS[5])
  elseif limit == '' then
    heard = redis.call('MGET', KEYS[12] .. ':listeners', KEYS[2] .. ':listeners', KEYS[4], KEYS[3] .. ':live',
      KEYS[4] .. ':fresh')
  else
    if checked then
      heard = redis.call('MGET', KEYS[12] .. ':listeners', KEYS[2] .. ':listeners', KEYS[4], KEYS[3] .. ':live',
        KEYS[4] .. ':fresh', KEYS[5], KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19],
        KEYS[20], KEYS[21])
    else
      heard = redis.call('MGET', KEYS[12] .. ':listeners', KEYS[2] .. ':listeners', KEYS[4], KEYS[3] .. ':live',
        KEYS[4] .. ':fresh', KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19], KEYS[20],
        KEYS[21])
    end
    local used = 0
    for i = checked and 7 or 6, #heard do used = used + (tonumber(heard[i]) or 0) end
    if used >= tonumber(limit) then overStorage = 'over-storage ' .. string.format('%.0f', used) end
  end
  if ARGV[8] ~= '' then
${COUNT_IN_WINDOW}
    if not overStorage and counted > tonumber(ARGV[8]) then return 'rate-limited' end
  end
  if overStorage then return overStorage end
  if ARGV[7] == '1' then
    local held = heard[6]
    if not held or cjson.decode(held).runId ~= ARGV[1] then return 'superseded' end
  end
  local owner = heard[3]
  if owner and owner ~= ARGV[4] then return 'session-taken' end
  if not owner or not heard[5] then
    local fresh = ${OWNER_FRESH}
    if fresh < 1 then
      redis.call('SET', KEYS[4], ARGV[4], 'EX', ARGV[5])
    else
      redis.call('SET', KEYS[4], ARGV[4], 'EX', tonumber(ARGV[5]) + fresh)
      redis.call('SET', KEYS[4] .. ':fresh', '1', 'EX', fresh)
    end
  end
  local n = inFlight(KEYS[1], KEYS[3], ARGV[6], heard[4] ~= false)
  if n >= tonumber(ARGV[3]) then return 'over-quota' end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  return nil, owner ~= false, heard
end
