-- An execution's start (includes/begin-attempt.lua).
-- KEYS[1] journal, KEYS[2] run record, KEYS[3] (optional) the run's event stream (one slot:
--   `{runId}`).
-- ARGV[1] ttlSeconds, then with KEYS[3]: ARGV[2] maxLen, ARGV[3] eventType,
--   ARGV[4] sealedEventData, ARGV[5] channel, ARGV[6] message, ARGV[7] nowMs.
-- Returns {record, attempt | 0, journal}, hashes flattened.
--- @include "begin-attempt"
return beginAttempt(1, 1)
