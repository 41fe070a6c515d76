-- Counts bytes more in a tenant's stored-bytes counter (includes/charge.lua).
-- KEYS[1] the counter. ARGV[1] bytes, ARGV[2] when the counter expires (unix seconds).
--- @include "charge"
chargeBytes(KEYS[1], ARGV[1], ARGV[2])
return 1
