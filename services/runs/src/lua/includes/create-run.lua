-- The run half of a create, its keys from KEYS[k] and its arguments from ARGV[a] on.
-- KEYS: run, events. ARGV: channel, message, maxlen, sealedStatusEvent, field, value, ...
local function createRun(k, a)
  local fields = {}
  for i = a + 4, #ARGV do fields[#fields + 1] = ARGV[i] end
  redis.call('HSET', KEYS[k], unpack(fields))
  redis.call('XADD', KEYS[k + 1], 'MAXLEN', '~', ARGV[a + 2], '*', 'type', 'status', 'data', ARGV[a + 3])
  redis.call('PUBLISH', ARGV[a], ARGV[a + 1])
end
