-- Drops an Idempotency-Key only while it is still the failed request's (a retry may have taken it
-- over meanwhile).
-- KEYS[1] idempotency key. ARGV[1] the value the failed request set.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
