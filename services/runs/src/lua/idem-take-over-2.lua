-- A retry takes an Idempotency-Key over from a first request that stored no run (it died between
-- claiming the key and its admission): only while the key still holds what the retry read, and
-- only if that run was never admitted (an in-flight entry means its record is on its way; an
-- admitted run that died unwritten loses its entry to the recovery loop's in-flight walk, and then this succeeds).
-- The first request, if it still lives, is refused at its admission ('superseded').
-- KEYS[1] idempotency key, KEYS[2] inflight.
-- ARGV[1] value read, ARGV[2] new value, ARGV[3] ttlSeconds, ARGV[4] the first request's run id.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('ZSCORE', KEYS[2], ARGV[4]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
