-- A run's slot lease and its execution's start in one step, for one server only (the pool's keys
-- and the run's are in different slots, so never on a Cluster). The lease is decided first
-- (includes/lease-acquire.lua); refused, the script ends before anything of the run is read or
-- written (no attempt spent, nothing to undo), else the attempt begins (includes/begin-attempt.lua).
-- KEYS[1..6] lease-acquire-6's KEYS[1..6]; KEYS[7] journal, KEYS[8] run record, KEYS[9] the run's
--   event stream (begin-attempt-3's KEYS[1..3]).
-- ARGV[1..5] lease-acquire-6's ARGV[1..5], ARGV[6..12] begin-attempt-3's ARGV[1..7].
-- Returns {record, attempt | 0, journal, lease}: lease is lease-acquire-6's answer; when refused,
-- record and journal are empty and attempt 0.
--- @include "lease-acquire"
--- @include "begin-attempt"
local lease = acquireLease(1, 1)
if lease[1] ~= 1 then return {{}, 0, {}, lease} end
local begun = beginAttempt(7, 6)
begun[4] = lease
return begun
