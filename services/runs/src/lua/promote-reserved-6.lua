-- A reserved job promoted by the runner (its tenant-slot.ts `promote`: a Cluster, a skill, a paused
-- or concurrency-capped queue, a refusal past the fused fetch's moves): BullMQ's promote (promote-9)
-- but to the consumer's end of the list, where the end's own script puts the job it promotes
-- (lease-scripts.ts `endAndCompleteScript`: RPUSH). A worker's fetch takes the wait list from
-- that end (moveToActive's RPOPLPUSH) and BullMQ's add and promote LPUSH to the other: a job that
-- holds a slot's reservation is its tenant's oldest waiting one and the pool's longest-waiting
-- grant, so it is fetched next, not after the whole backlog (whose jobs would each be refused
-- meanwhile: the reservation counts against their tenant's share and the pool), and whichever
-- promoter moved it, it is in the same place (test/bench/README.md, round 27, `fair-order`).
-- Behind the reserved jobs promoted there before it and not fetched yet, first in, first out: a
-- tenant's two reservations promoted one after the other were fetched in reverse order (round 28,
-- `fair-edges`). Such a job is marked in its hash (`rsv`: its fetch count `ats` when promoted; a
-- fetch raises `ats`, so the mark holds only until it is fetched), which BullMQ does not read.
-- A job no longer delayed but waiting unmarked was promoted by its recheck (BullMQ's promotion of
-- due delayed jobs, to the far end, behind the backlog) before this promote: moved to its place.
-- The `waiting` event is not written (bull-quiet.ts: the stream's one reader waits for skill jobs'
-- ends).
-- KEYS[1] delayed, KEYS[2] wait, KEYS[3] paused, KEYS[4] meta, KEYS[5] active, KEYS[6] marker (the
--   queue's, one slot).
-- ARGV[1] the queue's key prefix (`queue.toKey('')`), ARGV[2] job id.
-- Returns 0 promoted, -3 not in the delayed set (nor waiting behind the backlog), -4 active, -2
-- prioritized (not moved: BullMQ's promote places it by its priority).
local id = ARGV[2]
local jobKey = ARGV[1] .. id
local job = redis.call('HMGET', jobKey, 'priority', 'ats', 'rsv')
if (tonumber(job[1]) or 0) ~= 0 then return -2 end
local fetches = job[2] or '0'
local delayed = redis.call('ZREM', KEYS[1], id) == 1
-- Not delayed: at the front already, still active (its runner's move to delayed has not landed; the
-- active list is as short as the workers' slots: the caller waits for the move without asking
-- BullMQ for the job's state), or gone.
if not delayed then
  if job[3] == fetches then return -3 end
  if redis.call('LPOS', KEYS[5], id) then return -4 end
end
-- getTargetQueueList's: a paused queue's jobs wait in its paused list (renamed to the wait list on
-- resume, the order kept), a capped one's in the wait list without a marker.
local meta = redis.call('HMGET', KEYS[4], 'paused', 'concurrency')
local target, held = KEYS[2], false
if meta[1] then target, held = KEYS[3], true
elseif meta[2] and redis.call('LLEN', KEYS[5]) >= tonumber(meta[2]) then held = true end
-- Its recheck's promotion came first: it waits near the list's far end (LREM scans from there).
if not delayed and redis.call('LREM', target, 1, id) == 0 then return -3 end
local ahead = {}
while true do
  local top = redis.call('LINDEX', target, -1)
  if not top then break end
  local mark = redis.call('HMGET', ARGV[1] .. top, 'rsv', 'ats')
  if not mark[1] or mark[1] ~= (mark[2] or '0') then break end
  ahead[#ahead + 1] = redis.call('RPOP', target)
end
local push = { id }
for i = #ahead, 1, -1 do push[#push + 1] = ahead[i] end
redis.call('RPUSH', target, unpack(push))
if not held then redis.call('ZADD', KEYS[6], 0, '0') end
redis.call('HSET', jobKey, 'delay', 0, 'rsv', fetches)
return 0
