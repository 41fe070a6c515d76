-- A job's slot lease given back alone (includes/lease-release.lua): every release but the one that
-- rides in a run's end (finish-run-release-18).
-- KEYS[1] pool slots, KEYS[2] pool busy, KEYS[3] pool queued, KEYS[4] pool waiting, KEYS[5] tenant
--   leases (one slot: `{pool:<mode>}`).
-- ARGV[1..5] job id ('' = none), share, absolute cap, lease ms, pool tenant key prefix.
-- Returns { job id, tenant } for the caller to promote, else false.
--- @include "lease-release"
return releaseLease(1, 1)
