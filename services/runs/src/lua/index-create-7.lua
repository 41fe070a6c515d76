-- A skill's index entry on its own (a skill has no run record).
-- KEYS[1..6] the tenant's index keys and feed (includes/index-create.lua), KEYS[7] (optional) the
--   session's run list, for a skill in a session (a session's runs are listed from it).
-- ARGV[1..8] as indexCreate's.
--- @include "index-create"
indexCreate(1, 1)
if KEYS[7] then redis.call('ZADD', KEYS[7], ARGV[2], ARGV[1]) end
return 1
