-- The tenant half of an admitted create (a flood of parallel submits cannot pass the quota between
-- a count and an add). KEYS[1..6]: inflight, session runs, skills, session owner, idempotency key,
-- the tenant's rate-limit window. ARGV[1..8]: runId, createdAt, maxInFlight, principal,
-- sessionTtlSeconds, nowMs, checkIdempotency ('1'|'0'), rateLimit ('' = the request was counted
-- already).
-- The tenant's stored bytes are read first (KEYS[13..21] against ARGV[19], includes/stored-bytes.lua):
-- a tenant holding its share is refused with that before anything else, its request still counted.
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
-- marker, idempotency} (false: none).
--- @include "in-flight"
--- @include "stored-bytes"
local function admitTenant()
  local overStorage, heard = storedBytesOver(13, 21, ARGV[19], {
    KEYS[12] .. ':listeners', KEYS[2] .. ':listeners', KEYS[4], KEYS[3] .. ':live', KEYS[4] .. ':fresh',
    ARGV[7] == '1' and KEYS[5] or nil,
  })
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
