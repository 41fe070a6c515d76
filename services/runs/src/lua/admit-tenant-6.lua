-- The tenant half of a create, with the tenant's admission checked in the same step.
-- KEYS[1] inflight, KEYS[2] session runs, KEYS[3] skills, KEYS[4] session owner,
--   KEYS[5] idempotency key, KEYS[6] the tenant's rate-limit window.
-- ARGV[1..8]: see includes/admit-tenant.lua.
-- Returns 'created', 'rate-limited', 'superseded', 'session-taken' or 'over-quota'.
--- @include "admit-tenant"
local refused = admitTenant()
if refused then return refused end
return 'created'
