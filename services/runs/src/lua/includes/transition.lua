-- writeTransition(k, a, f, push, old, before, firstOnly): a run's status change, once the caller saw
-- it is not final (its status `old`; `before`: the record as the caller read it whole, or nil).
-- `firstOnly`: the caller knows the journal holds its first attempt's count alone (no call was ever
-- sent: includes/finish-run.lua), so the push carries it as it must be, unread.
-- KEYS[k] run record, KEYS[k+1] events, KEYS[k+2] the run's journal (read with `push`).
-- ARGV[a] message (the run id, then optionally a space and a tag), ARGV[a+1] channel,
--   ARGV[a+2] eventType, ARGV[a+3] sealedEventData, ARGV[a+4] maxlen, ARGV[a+5] ttlSeconds,
--   ARGV[f..] field, value, ...
-- A final status with `push` publishes `<id> end [record, journal]` (both hashes flattened, as
-- cjson encodes them: an empty one is `{}`) when they fit ${END_PUSH_MAX_BYTES} bytes, so the
-- gateway holding the submit answers it without reading them back. With `before` the record
-- pushed is `before` with this write applied as HSET applies it (no second read).
-- Returns the status the write leaves (the old one when no status is given), and the id of the
-- event it appended (`<ms>-<n>`: Redis's clock, as TIME reads it, or later than the stream's last
-- entry should that clock have stepped back).
local function writeTransition(k, a, f, push, old, before, firstOnly)
  local fields = {}
  local newStatus = old
  for i = f, #ARGV do
    fields[#fields + 1] = ARGV[i]
    -- the status this write leaves (the last one given wins, as in HSET), without reading it back
    if (i - f) % 2 == 0 and ARGV[i] == 'status' and ARGV[i + 1] then newStatus = ARGV[i + 1] end
  end
  redis.call('HSET', KEYS[k], unpack(fields))
  local ended = newStatus == 'Completed' or newStatus == 'Failed' or newStatus == 'Cancelled'
  if ended then
    redis.call('EXPIRE', KEYS[k], ARGV[a + 5])
    redis.call('EXPIRE', KEYS[k + 1], ARGV[a + 5])
  end
  local at = redis.call('XADD', KEYS[k + 1], 'MAXLEN', '~', ARGV[a + 4], '*', 'type', ARGV[a + 2], 'data', ARGV[a + 3])
  local message = ARGV[a]
  if ended and push then
    local run
    if before then
      run = {}
      local at = {}
      for i = 1, #before, 2 do
        run[i], run[i + 1] = before[i], before[i + 1]
        at[before[i]] = i
      end
      for i = 1, #fields, 2 do
        local p = at[fields[i]]
        if p then
          run[p + 1] = fields[i + 1]
        else
          local n = #run
          run[n + 1], run[n + 2] = fields[i], fields[i + 1]
          at[fields[i]] = n + 1
        end
      end
    else
      run = redis.call('HGETALL', KEYS[k])
    end
    local journal
    if firstOnly then journal = {'#attempt', '1'} else journal = redis.call('HGETALL', KEYS[k + 2]) end
    local size = 0
    for _, v in ipairs(run) do size = size + #v end
    for _, v in ipairs(journal) do size = size + #v end
    if size <= ${END_PUSH_MAX_BYTES} then message = ARGV[a] .. ' end ' .. cjson.encode({run, journal}) end
  end
  redis.call('PUBLISH', ARGV[a + 1], message)
  return newStatus, at
end
