-- A job's slot lease given back alone (includes/lease-release.lua): every release but the one that
-- rides in a run's end (finish-run-release-19).
-- KEYS[1] pool slots, KEYS[2] pool busy, KEYS[3] pool queued, KEYS[4] pool waiting, KEYS[5] tenant
--   leases (one slot: `{pool:<mode>}`).
-- ARGV[1..5] job id ('' = none), share, absolute cap, lease ms, pool tenant key prefix; optional
--   ARGV[6..7] the job's tenant and 'back' | 'gone' when the lease is a reservation given up
--   untaken (includes/lease-release.lua's `givenUp`).
-- Returns { job id, tenant } for the caller to promote, else false.
--- @include "lease-release"
local givenUp
if ARGV[7] then givenUp = {ARGV[6], ARGV[7] == 'back'} end
return releaseLease(1, 1, nil, givenUp)
