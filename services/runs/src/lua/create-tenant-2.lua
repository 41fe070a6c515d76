-- The tenant half of a create without an admission.
-- KEYS[1] inflight, KEYS[2] session runs. ARGV[1] runId, ARGV[2] createdAt.
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
