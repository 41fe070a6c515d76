-- KEYS[1] inflight, KEYS[2] session runs, KEYS[3] skills, KEYS[4] session owner,
--   KEYS[5] idempotency key, KEYS[6] the tenant's rate-limit window, KEYS[7] … KEYS[12] the tenant's
--   run index and feed (includes/index-create.lua), KEYS[13] the tenant's stored-bytes counter
--   (the newest bucket), KEYS[14] … KEYS[21] its eight older buckets (includes/admit-tenant.lua).
-- ARGV[1..8]: see includes/admit-tenant.lua; ARGV[9..16] the index arguments; ARGV[17] the bytes
--   the run's record stores ('0': none counted), ARGV[18] when the counter expires (unix seconds),
--   ARGV[19] the tenant's share of stored bytes ('' = none).
-- An admitted run's bytes are counted here (includes/charge.lua), a refused one's not.
-- Returns 'created', 'over-storage <bytes>', 'rate-limited', 'superseded', 'session-taken' or
-- 'over-quota'.
--- @include "admit-tenant"
--- @include "index-create"
--- @include "charge"
local refused, owned, heard = admitTenant()
if refused then return refused end
indexCreate(7, 9, owned, not heard[1])
chargeBytes(KEYS[13], ARGV[17], ARGV[18])
return 'created'
