-- finishTenant(k, a, status, kind, quiet): the tenant half of a run's end. Leaves the in-flight set and,
-- when `status` is final, appends the end to the tenant's pending list, which includes/index-fold.lua
-- applies to the index, the day's usage and the hour's health (the end's bucket of
-- HEALTH_BUCKET_MS counts its status, its failure kind and its latency, creation to end, in
-- a log-scale histogram) once: by a fold-index-5 call of its own that the end's caller sends after the
-- end's answer when the list holds ${FOLD_AT} entries or more (this returns 2 then), else whenever a
-- reader of those keys folds it first (run-index.ts). Not here: a fold of 64 entries is ~1 ms of
-- Redis's CPU and ~14 KB of fsync'd AOF, which an end that folded kept from its waiter's wake-up
-- (+1.2-1.7 ms p50 on 1 run in 32, test/bench/README.md, round 38 `tail99`, round 39 `fold-off`).
-- A fold lost (its caller died first) is made by the next end's caller (the list is still long)
-- or the next read; a second fold finds nothing and writes nothing. The feed hears the end at once
-- (announced unless `quiet`: includes/feed.lua).
-- KEYS[k] inflight, KEYS[k+1] pending list, KEYS[k+2..k+5] summaries, ended, sessions, session
--   stats, KEYS[k+6] usage day (HASH), KEYS[k+7] feed, KEYS[k+8] health hour (HASH).
-- ARGV[a] run id, ARGV[a+2] ended ms, ARGV[a+4] output bytes, ARGV[a+5] binding calls,
--   ARGV[a+6] sandbox CPU ms, ARGV[a+7] when the usage day expires (unix seconds; '' in format 2:
--   the entry then names neither the usage day, nor the health hour, nor the expiry, which the fold
--   derives from its end time, includes/index-fold.lua), ARGV[a+8] tenant.
-- Returns 1 when the end was appended (a final status), 2 when so and the list is due a fold.
--- @include "feed"
-- A final status told without includes/run-final.lua's `isFinal`: one function fewer made at every
-- end (round 50 `end-script`).
local function finishTenant(k, a, status, kind, quiet)
  local id = ARGV[a]
  redis.call('ZREM', KEYS[k], id)
  if not (status == 'Completed' or status == 'Failed' or status == 'Cancelled') then return 0 end
  -- A count of 0 and an empty kind are left out: every fold reads them absent as 0 and ''
  -- (includes/index-fold.lua, since the list's first release), ~12 bytes of the end's fsync'd write
  -- (test/bench/README.md, round 36, `aof-trim`).
  -- '0' and '' read as 0 without tonumber (its strtod ~1,100 instructions a count; a trivial run's
  -- calls and CPU ms are '0': round 50 `end-script`), the same value tonumber gives.
  local o, b, c = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  o = (o == '0' or o == '') and 0 or tonumber(o) or 0
  b = (b == '0' or b == '') and 0 or tonumber(b) or 0
  c = (c == '0' or c == '') and 0 or tonumber(c) or 0
  local x = ARGV[a + 7]
  local lean = x == ''
  local entry = cjson.encode({
    i = id, s = status, e = ARGV[a + 2], k = kind ~= '' and kind or nil,
    o = o ~= 0 and o or nil, b = b ~= 0 and b or nil, c = c ~= 0 and c or nil,
    u = (not lean) and KEYS[k + 6] or nil, x = (not lean) and x or nil, h = (not lean) and KEYS[k + 8] or nil,
  })
  local due = redis.call('RPUSH', KEYS[k + 1], entry) >= ${FOLD_AT}
  -- Bare: the fold that applies this end's entry trims the feed (includes/feed.lua).
  feedAppend(KEYS[k + 7], 'run', id, ARGV[a + 8], quiet, true)
  if due then return 2 end
  return 1
end
