-- The run half of a create.
-- KEYS[1] run, KEYS[2] events. ARGV[1] channel, ARGV[2] message, ARGV[3] maxlen,
--   ARGV[4] sealedStatusEvent, ARGV[5..] field, value, ...
--- @include "create-run"
createRun(1, 1)
return 1
