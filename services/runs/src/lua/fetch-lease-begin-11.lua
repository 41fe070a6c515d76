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
-- KNOWN_RUN (a parameter): nil, or (in the hand-off's add) a Lua expression: a record the same
--   script created, as includes/begin-attempt.lua's `known` takes it.
-- UNCOUNTED (a parameter): nil, or (in the hand-off's add) a Lua expression: {job = id} of a job the
--   pool's queued counts do not hold, as includes/lease-acquire.lua's `uncounted` takes it.
-- KNOWN_JOB, KNOWN_TENANT (parameters): nil and nil, or (in the hand-off's add inside a submit's
--   admission) Lua expressions: a job data text whose decoding the embedding script's caller
--   vouches for, the run's format-2 data `{"tenant":KNOWN_TENANT,"enqueuedAtMs":…}` (no runId, no
--   skill; admitted-add.ts), and that tenant. A job whose hash holds that very text as its second
--   field (the add's HMSET: name, data, …) is read as that, not decoded (`cjson.decode` and the
--   walk to its field: ~7 K instructions a handed submit, test/bench/README.md round 51 `submit-lua`).
-- DEFER (a parameter): nil, or a Lua expression (read before anything of the job) of the queue's
--   keys and the deferral's delay: {ms, active, stalled, delayed, marker, meta, prefix, ts} (`ts`
--   BullMQ's timestamp of the fetch, the worker's clock, as its moveToDelayed takes). With it a job
--   whose lease is refused is moved to the delayed set here, as the runner's `job.moveToDelayed`
--   (skipAttempt) would move it a round trip later, and REFETCH brings the worker's next job
--   instead: the worker's slot never holds a refused job (test/bench/README.md, round 26,
--   `fair-fetch`). A paused or concurrency-capped queue, or past MOVES moves in one call, the
--   refusal is answered as before (the runner moves the job).
-- START (a parameter): the table whose last ${FETCHED_ARGS} are the start's arguments: ARGV, or (in
--   `endCompleteStartScript`) its parts' SA.
-- REFETCH (a parameter): with DEFER, the name of a function bringing the worker's next job (BullMQ's
--   fetch with the look behind it: moveToActive-11's answer).
-- Returns BullMQ's answer; with a run's job, a fifth element: lease-and-begin-9's answer; with jobs
--   moved here, a seventh: {job id, tenant, quota, job id whose reservation the runner must promote
--   or ''} a job moved (the fifth and sixth then false when unset).
local Q = ${DEFER}
local A = ${START}
local o = #A - ${FETCHED_ARGS}
-- The includes read KEYS and ARGV: these locals, declared before them, are the ones they see
-- (set for each job taken).
local KEYS, ARGV
--- @include "lease-acquire"
--- @include "begin-attempt"
-- A fetch's answer with its run's start; refused, also the acquire's answer and the tenant.
local function startRun(fetched, seen)
  local fields = fetched[1]
  if type(fields) ~= 'table' then return fetched end
  local runId, tenant
  local known = ${KNOWN_JOB}
  -- Strings are interned: the compare of the same text is one of pointers.
  if known and fields[3] == 'data' and fields[4] == known then
    runId, tenant = fetched[2], ${KNOWN_TENANT}
  else
    local data
    for i = 1, #fields, 2 do
      if fields[i] == 'data' then data = fields[i + 1] end
    end
    local decoded, job = pcall(cjson.decode, data or '')
    if not decoded or type(job) ~= 'table' then return fetched end
    -- A run's job written by format 2 has no runId: its job id is the run's (jobs.ts `jobRunId`).
    runId, tenant = job.runId or fetched[2], job.tenant
    if (job.skill ~= nil and job.skill ~= cjson.null) or type(runId) ~= 'string' or type(tenant) ~= 'string' then
      return fetched
    end
  end
  -- A key made of the id between its two parts (A[o + i], A[o + i + 1]), written out: a helper
  -- function would be made at every call, reading A and o as upvalues (test/bench/README.md round 48
  -- `submit-closures`).
  KEYS = {
    A[o + 1], A[o + 2], A[o + 3], A[o + 4], A[o + 5] .. tenant .. A[o + 6], A[o + 7] .. tenant .. A[o + 8],
    A[o + 9] .. runId .. A[o + 10], A[o + 11] .. runId .. A[o + 12], A[o + 13] .. runId .. A[o + 14],
  }
  ARGV = {
    fetched[2], tenant, A[o + 15], A[o + 16], A[o + 17],
    A[o + 18], A[o + 19], A[o + 20], A[o + 21], A[o + 22], runId .. A[o + 23], A[o + 24],
  }
  local lease = acquireLease(1, 1, seen, ${POOL_NOW}, ${UNCOUNTED})
  if lease[1] ~= 1 then
    fetched[5] = {{}, 0, {}, lease}
    return fetched, lease, tenant
  end
  local begun = beginAttempt(7, 6, ${KNOWN_RUN})
  begun[4] = lease
  fetched[5] = begun
  return fetched
end
local fetched, refused, tenant = startRun(fetchJob(), ${POOL_SEEN})
if not refused or not Q then return fetched end
-- BullMQ's moveToDelayed (skipAttempt: `atm` untouched, as the runner's call sends it), with the
-- job fetched in this very call: its lock is the one this fetch just set (its token's), so it is
-- deleted without a read. Its `delayed` event is not written (bull-quiet.ts: the stream's one
-- reader waits for skill jobs' ends; a skill's job never gets here).
local function moveToDelayed(id)
  local jobKey = Q.prefix .. id
  redis.call('DEL', jobKey .. ':lock')
  redis.call('SREM', Q.stalled, id)
  redis.call('LREM', Q.active, -1, id)
  -- getDelayedScore's: the due time's ms shifted by 12 bits, one more than the last of that ms.
  local due = tonumber(Q.ts) + Q.ms
  local score, top = due * 0x1000, (due + 1) * 0x1000 - 1
  local last = redis.call('ZREVRANGEBYSCORE', Q.delayed, top, score, 'WITHSCORES', 'LIMIT', 0, 1)
  local at = tonumber(last[2])
  if at then score = math.min(at + 1, top) end
  redis.call('HSET', jobKey, 'delay', Q.ms)
  redis.call('ZADD', Q.delayed, score, id)
end
local moved, MOVES = {}, 4
-- Paused or capped (nothing in this call changes either): the runner moves the job, as before.
local meta = redis.call('HMGET', Q.meta, 'paused', 'concurrency')
if meta[1] or meta[2] then return fetched end
while refused and #moved < MOVES do
  local id = fetched[2]
  moveToDelayed(id)
  moved[#moved + 1] = {id, tenant, refused[2], refused[3] or ''}
  -- The pool's waiting list changed (this refusal listed its tenant): the acquire reads it again.
  fetched, refused, tenant = startRun(${REFETCH}(), nil)
end
if type(fetched[1]) ~= 'table' then
  -- No job after all: addDelayMarkerIfNeeded's, so a worker blocked on the marker wakes for it.
  local first = redis.call('ZRANGE', Q.delayed, 0, 0, 'WITHSCORES')
  if first[2] then redis.call('ZADD', Q.marker, tonumber(first[2]) / 0x1000, '1') end
end
if fetched[5] == nil then fetched[5] = false end
if fetched[6] == nil then fetched[6] = false end
fetched[7] = moved
return fetched
