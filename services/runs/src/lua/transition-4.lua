-- A run's status change, refused once the run is final (includes/transition.lua).
-- KEYS[1] run record, KEYS[2] events, KEYS[3] the run's journal (expired with the others at an
--   end; read for the push), KEYS[4] (optional: absent when the caller knows the run has none) the run's
--   decisions (expired with them at an end).
-- ARGV[1] message (the run id, then optionally a space and a tag), ARGV[2] channel,
--   ARGV[3] eventType, ARGV[4] sealedEventData, ARGV[5] maxlen, ARGV[6] ttlSeconds,
--   ARGV[7] '1': the end is pushed to its waiter, ARGV[8..] field, value, ...
-- Returns 1 (written), 0 (already final: nothing written), -1 (no record).
--- @include "final-guard"
--- @include "transition"
writeTransition(1, 1, 8, ARGV[7] == '1', st, nil, nil, KEYS[4] and 4)
return 1
