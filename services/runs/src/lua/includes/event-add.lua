-- eventAdd(stream, maxLen, field, value, ...): a run's event appended to its stream, trimmed to about
-- maxLen entries (MAXLEN ~) only when the stream holds that many already. Below that the trim
-- removes nothing (an approximate trim removes whole nodes only while maxLen entries stay, and
-- the stream then holds at most maxLen), yet Redis propagates an XADD given MAXLEN with its trim
-- made exact (`MAXLEN = <length>`): 26 bytes more in the fsync'd AOF write and the replicas' stream
-- for every event, the same stream either way (test/bench/README.md, round 36, `aof-trim`). XLEN
-- is a read: nothing propagated.
local function eventAdd(stream, maxLen, ...)
  if redis.call('XLEN', stream) < tonumber(maxLen) then return redis.call('XADD', stream, '*', ...) end
  return redis.call('XADD', stream, 'MAXLEN', '~', maxLen, '*', ...)
end
