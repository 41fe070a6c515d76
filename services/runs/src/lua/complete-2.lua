-- Stores calls' outcomes, assigning each its delivery sequence; one reply per call, in order.
-- KEYS[1] journal hash, KEYS[2] (optional) the run's event stream.
-- ARGV[1] ttlSeconds, then with KEYS[2]: ARGV[2] maxLen, ARGV[3] channel, ARGV[4] message; then
--   per call (COMPLETE_FIELDS): field, sealedOutcome, nowMs, and with KEYS[2]
--   eventType, sealedEventData (empty fields without it).
-- A call's event is appended only when this call stored the outcome (never for a kept one), in
-- the same step, so the answer to the runner waits for one round trip, not two; one PUBLISH wakes
-- the stream's readers for all the events appended.
-- Replies per call: {'stored', seq}, {'kept', seq} or {'missing'}.
local first = 2
if KEYS[2] then first = 5 end
local replies = {}
local stored, appended = false, false
for b = first - 1, #ARGV - 1, ${COMPLETE_FIELDS} do
  local raw = redis.call('HGET', KEYS[1], ARGV[b + 1])
  if not raw then
    replies[#replies + 1] = {'missing'}
  else
    local e = cjson.decode(raw)
    if e.st == 'done' then
      replies[#replies + 1] = {'kept', tostring(e.seq)}
    else
      local seq = redis.call('HINCRBY', KEYS[1], '#seq', 1)
      e.st = 'done'
      e.o = ARGV[b + 2]
      e.seq = seq
      e.t1 = tonumber(ARGV[b + 3])
      redis.call('HSET', KEYS[1], ARGV[b + 1], cjson.encode(e))
      stored = true
      if KEYS[2] then
        redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'type', ARGV[b + 4], 'data', ARGV[b + 5])
        appended = true
      end
      replies[#replies + 1] = {'stored', tostring(seq)}
    end
  end
end
if stored then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1])) end
if appended then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return replies
