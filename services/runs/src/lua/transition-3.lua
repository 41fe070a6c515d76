-- A run's status change, refused once the run is final.
-- KEYS[1] run record, KEYS[2] events, KEYS[3] (optional) the run's journal: its waiter gets the
--   end pushed.
-- ARGV[1] message (the run id, then optionally a space and a tag), ARGV[2] channel,
--   ARGV[3] eventType, ARGV[4] sealedEventData, ARGV[5] maxlen, ARGV[6] ttlSeconds,
--   ARGV[7..] field, value, ...
-- A final status with KEYS[3] publishes `<id> end [record, journal]` (both hashes flattened, as
-- cjson encodes them: an empty one is `{}`) when they fit END_PUSH_MAX_BYTES, so the gateway
-- holding the submit answers it without reading them back.
-- Returns 1 (written), 0 (already final: nothing written), -1 (no record).
--- @include "final-guard"
local fields = {}
local newStatus = st
for i = 7, #ARGV do
  fields[#fields + 1] = ARGV[i]
  -- the status this write leaves (the last one given wins, as in HSET), without reading it back
  if (i - 7) % 2 == 0 and ARGV[i] == 'status' and ARGV[i + 1] then newStatus = ARGV[i + 1] end
end
redis.call('HSET', KEYS[1], unpack(fields))
local ended = newStatus == 'Completed' or newStatus == 'Failed' or newStatus == 'Cancelled'
if ended then
  redis.call('EXPIRE', KEYS[1], ARGV[6])
  redis.call('EXPIRE', KEYS[2], ARGV[6])
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'type', ARGV[3], 'data', ARGV[4])
local message = ARGV[1]
if ended and KEYS[3] then
  local run = redis.call('HGETALL', KEYS[1])
  local journal = redis.call('HGETALL', KEYS[3])
  local size = 0
  for _, v in ipairs(run) do size = size + #v end
  for _, v in ipairs(journal) do size = size + #v end
  if size <= ${END_PUSH_MAX_BYTES} then message = ARGV[1] .. ' end ' .. cjson.encode({run, journal}) end
end
redis.call('PUBLISH', ARGV[2], message)
return 1
