-- Stores a decision request unless one exists for the call.
-- KEYS[1] run's decisions hash. ARGV[1] field, ARGV[2] storedJson, ARGV[3] ttlSeconds (the
--   decision's wait plus the run's retention: decision-store.ts; 6b60376a sent the retention alone).
-- Returns {1, stored} (new) or {0, existing}.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if raw then return {0, raw} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return {1, ARGV[2]}
