-- Both halves of an admitted create in one step, for one server only (its keys span two slots, so
-- never on a Cluster).
-- KEYS[1..12], ARGV[1..16]: admit-tenant-12's; KEYS[13] run, KEYS[14] events and ARGV[17..]:
--   create-run-2's.
-- A refused admission writes nothing of the run (a rate-limited one only its count).
-- Returns what admit-tenant-12 returns.
--- @include "admit-tenant"
--- @include "create-run"
--- @include "index-create"
local refused = admitTenant()
if refused then return refused end
indexCreate(7, 9)
createRun(13, 17)
return 'created'
