-- Runs not ended plus skills whose reservation is live.
-- KEYS[1] inflight, KEYS[2] skills. ARGV[1] now ms.
--- @include "in-flight"
return inFlight(KEYS[1], KEYS[2], ARGV[1])
