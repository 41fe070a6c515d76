-- A job's slot lease alone (includes/lease-acquire.lua): skills, and runs on a Cluster (where the
-- pool's keys and the run's are in different slots, so lease-and-begin-9 cannot take it).
-- KEYS[1] pool slots, KEYS[2] pool busy, KEYS[3] pool queued, KEYS[4] pool waiting, KEYS[5] tenant
--   leases, KEYS[6] tenant deferred (one slot: `{pool:<mode>}`).
-- ARGV[1..5] job id, tenant, share, absolute cap, lease ms.
-- Returns { 1 | 0, quota[, job id whose reservation the caller must promote] }.
--- @include "lease-acquire"
return acquireLease(1, 1)
