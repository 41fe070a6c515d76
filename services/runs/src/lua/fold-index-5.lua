-- Applies a tenant's pending run ends to its index, usage and health (includes/index-fold.lua):
-- what every reader of those keys runs first, so it sees every end written before it asked.
-- KEYS[1] pending list, KEYS[2] summaries, KEYS[3] ended, KEYS[4] sessions, KEYS[5] session stats
--   (the tenant's slot; the usage and health keys the entries name are in it too).
-- ARGV[1] (optional; a reader sends none): fold only when the list holds at least this many entries.
--   An end's caller sends FOLD_AT (run-index.ts `foldAfterEnd`): a second fold sent for the same
--   list (two ends past FOLD_AT before the first fold ran) then reads its length and nothing else,
--   rather than fold the few entries appended since at a fold's fixed cost.
-- Returns how many entries it took.
--- @include "index-fold"
if ARGV[1] and redis.call('LLEN', KEYS[1]) < tonumber(ARGV[1]) then return 0 end
return foldIndex(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
