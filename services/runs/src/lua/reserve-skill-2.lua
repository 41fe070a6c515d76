-- A skill's place in the tenant's in-flight quota, shared with its runs.
-- KEYS[1] tenant skills, KEYS[2] inflight.
-- ARGV[1] skill id, ARGV[2] now ms, ARGV[3] ttl ms, ARGV[4] limit, ARGV[5] key ttl ms.
-- Returns 1 (reserved) or 0 (at the limit).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
-- Lives exactly as long as the set (same expiry, same step): an admission that finds it missing
-- knows no reservation is live without counting them (includes/in-flight.lua).
redis.call('SET', KEYS[1] .. ':live', '1', 'PX', ARGV[5])
return 1
