-- Both halves of an admitted create in one step, for one server only (its keys span two slots, so
-- never on a Cluster).
-- KEYS[1..6], ARGV[1..8]: admit-tenant-6's; KEYS[7] run, KEYS[8] events and ARGV[9..]:
--   create-run-2's.
-- A refused admission writes nothing of the run (a rate-limited one only its count).
-- Returns what admit-tenant-6 returns.
--- @include "admit-tenant"
--- @include "create-run"
local refused = admitTenant()
if refused then return refused end
createRun(7, 9)
return 'created'
