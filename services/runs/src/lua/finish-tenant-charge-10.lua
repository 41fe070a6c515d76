-- The tenant half of a run's end (includes/finish-tenant.lua) and the stored bytes the end adds to
-- its tenant's count (includes/charge.lua) in one call: on a Cluster after the run's final script
-- answered. Both are in the tenant's slot; until round 52 they went as two scripts together
-- (finish-tenant-9, charge-bytes-1: one command and one Redis message more a run). The same keys
-- written the same way as those two (which a previous release's runner sends and this one's skill
-- end and other charges still do).
-- KEYS[1..9] finish-tenant-9's KEYS[1..9], KEYS[10] the tenant's stored-bytes counter.
-- ARGV[1..9] finish-tenant-9's ARGV[1..9], ARGV[10] bytes, ARGV[11] when the counter expires (unix
--   seconds).
-- The bytes are counted whoever won the end (as finish-run-14 counts them). A charge that fails is
-- left, as the charge script's failure was ignored by its caller: the tenant half is written first
-- and its answer kept.
-- Returns finish-tenant-9's answer: 1 when the index recorded the end, 2 when so and the tenant's
-- pending list is due a fold (the caller sends fold-index-5 after), 0 otherwise.
--- @include "finish-tenant"
--- @include "charge"
local recorded = finishTenant(1, 1, ARGV[2], ARGV[4])
pcall(chargeBytes, KEYS[10], ARGV[10], ARGV[11])
return recorded
