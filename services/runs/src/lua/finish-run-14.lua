-- A run's end (includes/finish-run.lua), one server only.
-- KEYS[1] run record, KEYS[2] events, KEYS[3] the run's journal, KEYS[4..12] finish-tenant-9's
--   KEYS[1..9], KEYS[13] the tenant's stored-bytes counter, KEYS[14] the run's decisions.
-- ARGV[1..18] as includes/finish-run.lua's, ARGV[19..] field, value, ...
-- Returns 1 (written), 0 (already final: nothing written), -1 (no record); {that, 1} when the
-- tenant's pending list is due a fold, which the caller sends after (includes/finish-tenant.lua).
--- @include "finish-run"
local ended, due = finishRun(19, nil, 14)
if due then return {ended, 1} end
return ended
