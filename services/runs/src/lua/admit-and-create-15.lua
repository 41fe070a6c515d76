-- Both halves of an admitted create in one step, for one server only (its keys span two slots, so
-- never on a Cluster).
-- KEYS[1..13], ARGV[1..18]: admit-tenant-13's; KEYS[14] run, KEYS[15] events and ARGV[19..]:
--   create-run-2's.
-- A refused admission writes nothing of the run (a rate-limited one only its count).
-- Returns what admit-tenant-13 returns.
--- @include "admit-tenant"
--- @include "create-run"
--- @include "index-create"
--- @include "charge"
local refused = admitTenant()
if refused then return refused end
indexCreate(7, 9)
chargeBytes(KEYS[13], ARGV[17], ARGV[18])
createRun(14, 19)
return 'created'
