-- finishTenant(k, a, status, kind, quiet): the tenant half of a run's end. Leaves the in-flight set and,
-- when `status` is final, appends the end to the tenant's pending list, which includes/index-fold.lua
-- applies to the index, the day's usage and the hour's health (the end's bucket of
-- ${HEALTH_BUCKET_MS} ms counts its status, its failure kind and its latency, creation to end, in
-- a log-scale histogram) once: here when the list holds ${FOLD_AT} entries or more, else whenever a reader of
-- those keys folds it first (run-index.ts). The feed hears the end at once (announced unless
-- `quiet`: includes/feed.lua).
-- KEYS[k] inflight, KEYS[k+1] pending list, KEYS[k+2..k+5] summaries, ended, sessions, session
--   stats, KEYS[k+6] usage day (HASH), KEYS[k+7] feed, KEYS[k+8] health hour (HASH).
-- ARGV[a] run id, ARGV[a+2] ended ms, ARGV[a+4] output bytes, ARGV[a+5] binding calls,
--   ARGV[a+6] sandbox CPU ms, ARGV[a+7] when the usage day expires (unix seconds), ARGV[a+8] tenant.
-- Returns 1 when the end was appended (a final status).
--- @include "feed"
--- @include "run-final"
--- @include "index-fold"
local function finishTenant(k, a, status, kind, quiet)
  local id = ARGV[a]
  redis.call('ZREM', KEYS[k], id)
  if not isFinal(status) then return 0 end
  -- A count of 0 and an empty kind are left out: every fold reads them absent as 0 and ''
  -- (includes/index-fold.lua, since the list's first release), ~12 bytes of the end's fsync'd write
  -- (test/bench/README.md, round 36, `aof-trim`).
  local o, b, c = tonumber(ARGV[a + 4]) or 0, tonumber(ARGV[a + 5]) or 0, tonumber(ARGV[a + 6]) or 0
  local entry = cjson.encode({
    i = id, s = status, e = ARGV[a + 2], k = kind ~= '' and kind or nil,
    o = o ~= 0 and o or nil, b = b ~= 0 and b or nil, c = c ~= 0 and c or nil,
    u = KEYS[k + 6], x = ARGV[a + 7], h = KEYS[k + 8],
  })
  if redis.call('RPUSH', KEYS[k + 1], entry) >= ${FOLD_AT} then
    foldIndex(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5])
  end
  -- Bare: the fold that applies this end's entry trims the feed (includes/feed.lua).
  feedAppend(KEYS[k + 7], 'run', id, ARGV[a + 8], quiet, true)
  return 1
end
