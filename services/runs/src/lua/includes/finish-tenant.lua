-- finishTenant(k, a, status, kind): the tenant half of a run's end. Leaves the in-flight set and,
-- when `status` is final, records the end in the index, the day's usage and the hour's health
-- (health-store.ts: the end's bucket of ${HEALTH_BUCKET_MS} ms counts its status, its failure kind
-- and its latency, creation to end, in a log-scale histogram) once.
-- KEYS[k] inflight, KEYS[k+1..k+5] the five index keys (runs unused), KEYS[k+6] usage day (HASH),
--   KEYS[k+7] feed, KEYS[k+8] health hour (HASH).
-- ARGV[a] run id, ARGV[a+2] ended ms, ARGV[a+4] output bytes, ARGV[a+5] binding calls,
--   ARGV[a+6] sandbox CPU ms, ARGV[a+7] when the usage day expires (unix seconds), ARGV[a+8] tenant.
-- Returns 1 when the index recorded the end.
--- @include "feed"
--- @include "run-final"
local function finishTenant(k, a, status, kind)
  local id = ARGV[a]
  redis.call('ZREM', KEYS[k], id)
  if not isFinal(status) then return 0 end
  local summaries, usage, health = KEYS[k + 2], KEYS[k + 6], KEYS[k + 8]
  local raw = redis.call('HGET', summaries, id)
  if not raw then return 0 end
  local s = cjson.decode(raw)
  if isFinal(s.status) then return 0 end
  local endedAt = tonumber(ARGV[a + 2])
  s.status = status
  s.endedAt = endedAt
  if kind ~= '' then s.kind = kind end
  redis.call('HSET', summaries, id, cjson.encode(s))
  redis.call('ZADD', KEYS[k + 3], endedAt, id)
  if s.sessionId ~= '' then
    redis.call('ZADD', KEYS[k + 4], 'GT', endedAt, s.sessionId)
    redis.call('HINCRBY', KEYS[k + 5], s.sessionId .. '\n' .. status, 1)
  end
  -- The day's counters read and written whole (one HMGET, one HSET: the script is atomic, so as
  -- exact as an HINCRBY each). wallMs is written by every end: absent, the day's hash is new and
  -- gets its expiry, a fixed time after the day's end.
  local wall = math.max(0, endedAt - (tonumber(s.createdAt) or endedAt))
  local names = { 'runs:' .. status, 'wallMs', 'outputBytes', 'bindingCalls', 'cpuMs' }
  local adds = { 1, wall, tonumber(ARGV[a + 4]) or 0, tonumber(ARGV[a + 5]) or 0, tonumber(ARGV[a + 6]) or 0 }
  if s.style == 'skill' then
    names[6] = 'skillRuns'
    adds[6] = 1
  end
  local had = redis.call('HMGET', usage, unpack(names))
  local set = {}
  for i, name in ipairs(names) do
    set[#set + 1] = name
    set[#set + 1] = string.format('%.0f', (tonumber(had[i]) or 0) + adds[i])
  end
  redis.call('HSET', usage, unpack(set))
  if not had[2] then redis.call('EXPIREAT', usage, ARGV[a + 7]) end
  local bucket = math.floor(endedAt / ${HEALTH_BUCKET_MS}) .. '|'
  local latency = math.max(1, endedAt - (tonumber(s.createdAt) or endedAt))
  -- One counter per status and latency bin (health-buckets.ts: `e:`, read as both `n:` and `d:`).
  -- The hour's expiry is renewed by the first end of each bucket, status and bin (a bucket is
  -- ${HEALTH_BUCKET_MS} ms): it lapses at most one bucket earlier than one renewed by every end.
  local bin = math.floor(${LATENCY_BINS_PER_DOUBLING} * math.log(latency) / math.log(2))
  if redis.call('HINCRBY', health, bucket .. 'e:' .. status .. ':' .. bin, 1) == 1 then
    redis.call('EXPIRE', health, ${HEALTH_TTL_SECONDS})
  end
  if status == 'Failed' and kind ~= '' and kind ~= 'none' then redis.call('HINCRBY', health, bucket .. 'k:' .. kind, 1) end
  feedAppend(KEYS[k + 7], 'run', id, ARGV[a + 8])
  return 1
end
