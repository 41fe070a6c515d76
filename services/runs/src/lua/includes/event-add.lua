-- eventAdd(key, cap, short, field, value, ...): a run's event appended to its stream `key`, trimmed to
-- about `cap` entries (MAXLEN ~), unless `short`: the caller knows the stream holds only a few
-- entries (a new run's first event; its first attempt's start, after its create's and those of the
-- decisions before it; the end of a first attempt that sent no call), where the trim would remove
-- nothing (an approximate trim removes whole nodes only while `cap` entries stay). Redis writes an
-- XADD given MAXLEN to the AOF and the replicas with its trim made exact (`MAXLEN = <length>`):
-- 26 bytes of each of those events in the fsync'd write, for the same stream (test/bench/README.md,
-- round 36, `aof-trim`). A cap of 100 or fewer (tests set small ones) is always
-- given: below it "a few" is not small.
local function eventAdd(key, cap, short, ...)
  if short and tonumber(cap) > 100 then return redis.call('XADD', key, '*', ...) end
  return redis.call('XADD', key, 'MAXLEN', '~', cap, '*', ...)
end
