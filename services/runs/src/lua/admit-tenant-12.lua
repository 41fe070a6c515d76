-- KEYS[1] inflight, KEYS[2] session runs, KEYS[3] skills, KEYS[4] session owner,
--   KEYS[5] idempotency key, KEYS[6] the tenant's rate-limit window, KEYS[7] … KEYS[12] the tenant's
--   run index and feed (run-index-scripts.ts indexCreateLua).
-- ARGV[1..8]: see includes/admit-tenant.lua; ARGV[9..16] the index arguments.
-- Returns 'created', 'rate-limited', 'superseded', 'session-taken' or 'over-quota'.
--- @include "admit-tenant"
local refused = admitTenant()
if refused then return refused end
${INDEX_CREATE}
return 'created'
