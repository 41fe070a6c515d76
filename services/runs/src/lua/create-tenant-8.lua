-- The tenant half of a create without an admission.
-- KEYS[1] inflight, KEYS[2] session runs, KEYS[3] … KEYS[8] the tenant's run index and feed
--   (includes/index-create.lua).
-- ARGV[1] runId, ARGV[2] createdAt, ARGV[3..10] the index arguments (run-index-writes.ts indexCreateArgs).
--- @include "index-create"
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
indexCreate(3, 3)
return 1
