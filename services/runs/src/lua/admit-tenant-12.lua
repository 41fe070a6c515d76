-- KEYS[1] inflight, KEYS[2] session runs, KEYS[3] skills, KEYS[4] session owner,
--   KEYS[5] idempotency key, KEYS[6] the tenant's rate-limit window, KEYS[7] … KEYS[12] the tenant's
--   run index and feed (includes/index-create.lua).
-- ARGV[1..8]: see includes/admit-tenant.lua; ARGV[9..16] the index arguments.
-- Returns 'created', 'rate-limited', 'superseded', 'session-taken' or 'over-quota'.
--- @include "admit-tenant"
--- @include "index-create"
local refused = admitTenant()
if refused then return refused end
indexCreate(7, 9)
return 'created'
