-- The tenant half of a run's end (includes/finish-tenant.lua), alone: on a Cluster after the run's
-- final script answered, and for a skill's end.
-- KEYS[1] inflight, KEYS[2..6] the five index keys (runs unused), KEYS[7] usage day (HASH),
--   KEYS[8] feed, KEYS[9] health hour (HASH).
-- ARGV[1] run id, ARGV[2] final status ('' = this end lost the race: only leave in-flight),
--   ARGV[3] ended ms, ARGV[4] failure kind, ARGV[5] output bytes, ARGV[6] binding calls,
--   ARGV[7] sandbox CPU ms, ARGV[8] when the usage day expires (unix seconds), ARGV[9] tenant.
-- Returns 1 when the index recorded the end.
--- @include "finish-tenant"
return finishTenant(1, 1, ARGV[2], ARGV[4])
