-- A run's end (includes/finish-run.lua) written by the runner that holds the run's slot lease, and
-- the lease given back (includes/lease-release.lua) in the same step, one server only. The lease
-- is given back whether or not this end was the one written: the runner is done with the run.
-- KEYS[1..14] as finish-run-14's, KEYS[15] pool slots, KEYS[16] pool busy, KEYS[17] pool queued,
--   KEYS[18] pool waiting, KEYS[19] tenant leases (lease-release-5's KEYS[1..5]).
-- ARGV[1..18] as finish-run-14's, ARGV[19..23] lease-release-5's ARGV[1..5], ARGV[24..] field,
--   value, ...
-- POOL_SEEN (a parameter): nil, or (in `endCompleteStartScript`) the table its next job's acquire reads
--   (includes/lease-release.lua's `seen`; the end's time, includes/finish-run.lua's `note`).
-- Returns {1 | 0 | -1 (as finish-run-14's)[, job id, tenant: the deferred job the freed slot was
-- leased to, for the caller to promote (false, false: none)][, 1: the tenant's pending list is due
-- a fold, which the caller sends after (includes/finish-tenant.lua)]}.
--- @include "finish-run"
--- @include "lease-release"
local ended, due = finishRun(24, ${POOL_SEEN}, 14)
local given = releaseLease(15, 19, ${POOL_SEEN})
if due then return {ended, given and given[1] or false, given and given[2] or false, 1} end
if given then return {ended, given[1], given[2]} end
return {ended}
