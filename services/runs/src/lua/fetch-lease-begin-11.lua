-- A worker's fetch, its job's slot lease and the run's attempt start in one step, for one server
-- only (the queue's keys, the pool's and the run's are in different slots, and the pool's and the
-- run's are known only from the job the fetch returns, so they are not declared: never on a
-- Cluster). The caller puts BullMQ's own fetch script (moveToActive-11) before this text, wrapped
-- as `local function fetchJob() ... end` (`fetchLeaseBeginScript`), so its returns come back here;
-- or, as `endCompleteStartScript`'s `fetchJob`, BullMQ's completion fetching its worker's next job
-- (the same answer's shape), after the run's end (its own keys and arguments).
-- With no job, or a skill's job (it takes its lease apart), BullMQ's answer is returned as it is.
-- Else the lease and the start are those of lease-and-begin-9 (the same includes): the lease is
-- decided first; refused, nothing of the run is read or written.
-- KEYS[1]..KEYS[11] BullMQ's moveToActive-11 keys (wait … marker).
-- ARGV[1..n] BullMQ's moveToActive arguments, then the last ${FETCHED_ARGS} (`fetchedStartArgs`):
--   pool slots, pool busy, pool queued, pool waiting; the tenant's leases key and its deferred key,
--   the journal's, the record's and the event stream's key, each as the text before and after the
--   tenant (the first two) or the run id; share, cap, lease ms; ttlSeconds, maxLen, eventType, sealedEventData,
--   channel, the wake-up's text after the run id, nowMs.
-- POOL_SEEN (a parameter): nil, or (in `endCompleteStartScript`) what the run's end before it read of the pool
--   (includes/lease-acquire.lua's `seen`).
-- POOL_NOW (a parameter): nil, or (in the hand-off's add) the name of the caller's `now`, Redis's
--   time it read (includes/lease-acquire.lua's `now`).
-- Returns BullMQ's answer; with a run's job, a fifth element: lease-and-begin-9's answer.
local fetched = fetchJob()
local fields = fetched[1]
if type(fields) ~= 'table' then return fetched end
local o = #ARGV - ${FETCHED_ARGS}
local A = ARGV
local data
for i = 1, #fields, 2 do
  if fields[i] == 'data' then data = fields[i + 1] end
end
local decoded, job = pcall(cjson.decode, data or '')
if not decoded or type(job) ~= 'table' then return fetched end
local runId, tenant = job.runId, job.tenant
if (job.skill ~= nil and job.skill ~= cjson.null) or type(runId) ~= 'string' or type(tenant) ~= 'string' then
  return fetched
end
-- The includes read KEYS and ARGV: these locals, declared before them, are the ones they see.
local function key(i, id) return A[o + i] .. id .. A[o + i + 1] end
local KEYS = {
  A[o + 1], A[o + 2], A[o + 3], A[o + 4], key(5, tenant), key(7, tenant),
  key(9, runId), key(11, runId), key(13, runId),
}
local ARGV = {
  fetched[2], tenant, A[o + 15], A[o + 16], A[o + 17],
  A[o + 18], A[o + 19], A[o + 20], A[o + 21], A[o + 22], runId .. A[o + 23], A[o + 24],
}
--- @include "lease-acquire"
--- @include "begin-attempt"
local lease = acquireLease(1, 1, ${POOL_SEEN}, ${POOL_NOW})
if lease[1] ~= 1 then
  fetched[5] = {{}, 0, {}, lease}
  return fetched
end
local begun = beginAttempt(7, 6)
begun[4] = lease
fetched[5] = begun
return fetched
