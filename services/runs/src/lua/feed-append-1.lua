-- A feed entry on its own (a decision asked or answered).
-- KEYS[1] the tenant's feed. ARGV[1] type, ARGV[2] id, ARGV[3] tenant.
--- @include "feed"
feedAppend(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return 1
