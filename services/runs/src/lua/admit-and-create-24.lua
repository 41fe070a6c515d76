-- Both halves of an admitted create in one step, for one server only (its keys span two slots, so
-- never on a Cluster).
-- KEYS[1..21], ARGV[1..19]: admit-tenant-21's; KEYS[22] run, KEYS[23] events and ARGV[20..]:
--   create-run-2's. KEYS[24] (optional): the pool's queued counts (pool-demand.ts), counted for the
--   tenant (ARGV[16], the index's) whatever the answer: the caller's job goes out right behind this
--   script either way, and a refused submit's job is taken back with its count as before. Here it
--   costs no command of its own, and it still precedes the job's add on the same connection.
--   Carried in the job's add (admitted-add.ts) the count is that script's, for an admitted run only.
-- A refused admission writes nothing of the run (a rate-limited one, or one over its storage
-- share, only its count).
-- Returns what admit-tenant-21 returns; a script embedding this one (admitted-add.ts) also gets, as
-- a second value, the record as created (includes/create-run.lua's answer), which a run's start
-- later in the same script takes for its HGETALL (Redis keeps a script's first value only). Such a
-- script may put `true` in place of `(nil --[[islet:defer-record]])` (admitted-add.ts
-- DEFER_RECORD): the new record is then written by that start or at the script's end
-- (includes/create-run.lua `defer`).
--- @include "admit-tenant"
--- @include "create-run"
--- @include "index-create"
--- @include "charge"
if KEYS[24] then redis.pcall('HINCRBY', KEYS[24], ARGV[16], 1) end
local refused, owned, heard = admitTenant()
if refused then return refused end
indexCreate(7, 9, owned, not heard[1])
chargeBytes(KEYS[13], ARGV[17], ARGV[18])
return 'created', createRun(22, 20, heard, (nil --[[islet:defer-record]]))
