-- Applies a tenant's pending run ends to its index, usage and health (includes/index-fold.lua):
-- what every reader of those keys runs first, so it sees every end written before it asked.
-- KEYS[1] pending list, KEYS[2] summaries, KEYS[3] ended, KEYS[4] sessions, KEYS[5] session stats
--   (the tenant's slot; the usage and health keys the entries name are in it too).
-- ARGV: none.
-- Returns how many entries it took.
--- @include "index-fold"
return foldIndex(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
