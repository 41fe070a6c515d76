-- A run's end (includes/finish-run.lua), one server only.
-- KEYS[1] run record, KEYS[2] events, KEYS[3] the run's journal, KEYS[4..12] finish-tenant-9's
--   KEYS[1..9], KEYS[13] the tenant's stored-bytes counter.
-- ARGV[1..18] as includes/finish-run.lua's, ARGV[19..] field, value, ...
-- Returns 1 (written), 0 (already final: nothing written), -1 (no record).
--- @include "finish-run"
return finishRun(19)
