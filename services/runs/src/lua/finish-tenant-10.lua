-- The tenant half of a run's end: leaves the in-flight set and, when the run ended (its final
-- status given, or on one server read from the record, KEYS[10], which the run's final script
-- wrote just before on the same connection), records the end in the index, the day's usage and
-- the hour's health (health-store.ts: the end's bucket of ${HEALTH_BUCKET_MS} ms counts its
-- status, its failure kind and its latency, creation to end, in a log-scale histogram) once.
-- KEYS[1] inflight, KEYS[2..6] the five index keys (runs unused), KEYS[7] usage day (HASH),
--   KEYS[8] feed, KEYS[9] health hour (HASH), KEYS[10] (optional) the run record.
-- ARGV[1] run id, ARGV[2] final status ('' = this end lost the race: only leave in-flight),
--   ARGV[3] ended ms, ARGV[4] failure kind, ARGV[5] output bytes, ARGV[6] binding calls,
--   ARGV[7] sandbox CPU ms, ARGV[8] usage ttl seconds, ARGV[9] tenant.
-- Returns 1 when the index recorded the end.
--- @include "feed"
--- @include "run-final"
redis.call('ZREM', KEYS[1], ARGV[1])
local status = ARGV[2]
local kind = ARGV[4]
if KEYS[10] then
  status = redis.call('HGET', KEYS[10], 'status') or ''
  kind = redis.call('HGET', KEYS[10], 'kind') or kind
end
if not isFinal(status) then return 0 end
local raw = redis.call('HGET', KEYS[3], ARGV[1])
if not raw then return 0 end
local s = cjson.decode(raw)
if isFinal(s.status) then return 0 end
local endedAt = tonumber(ARGV[3])
s.status = status
s.endedAt = endedAt
if kind ~= '' then s.kind = kind end
redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(s))
redis.call('ZADD', KEYS[4], endedAt, ARGV[1])
if s.sessionId ~= '' then
  redis.call('ZADD', KEYS[5], 'GT', endedAt, s.sessionId)
  redis.call('HINCRBY', KEYS[6], s.sessionId .. '\n' .. status, 1)
end
redis.call('HINCRBY', KEYS[7], 'runs:' .. status, 1)
redis.call('HINCRBY', KEYS[7], 'wallMs', math.max(0, endedAt - (tonumber(s.createdAt) or endedAt)))
redis.call('HINCRBY', KEYS[7], 'outputBytes', tonumber(ARGV[5]) or 0)
redis.call('HINCRBY', KEYS[7], 'bindingCalls', tonumber(ARGV[6]) or 0)
redis.call('HINCRBY', KEYS[7], 'cpuMs', tonumber(ARGV[7]) or 0)
if s.style == 'skill' then redis.call('HINCRBY', KEYS[7], 'skillRuns', 1) end
redis.call('EXPIRE', KEYS[7], ARGV[8])
local bucket = math.floor(endedAt / ${HEALTH_BUCKET_MS}) .. '|'
local latency = math.max(1, endedAt - (tonumber(s.createdAt) or endedAt))
redis.call('HINCRBY', KEYS[9], bucket .. 'n:' .. status, 1)
if status == 'Failed' and kind ~= '' and kind ~= 'none' then redis.call('HINCRBY', KEYS[9], bucket .. 'k:' .. kind, 1) end
redis.call('HINCRBY', KEYS[9], bucket .. 'd:' .. math.floor(${LATENCY_BINS_PER_DOUBLING} * math.log(latency) / math.log(2)), 1)
redis.call('EXPIRE', KEYS[9], ${HEALTH_TTL_SECONDS})
feedAppend(KEYS[8], 'run', ARGV[1], ARGV[9])
return 1
