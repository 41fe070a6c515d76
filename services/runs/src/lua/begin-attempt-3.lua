-- An execution's start: the record as read; unless it is missing, ended or asked to cancel, the
-- next attempt (journal `#attempt`, its expiry, the record's `attempts`), and with KEYS[3] the
-- record marked Running at nowMs and a status event carrying the attempt in a plain `attempt`
-- field (it is known only here; the sealed data cannot hold it), published.
-- KEYS[1] journal, KEYS[2] run record, KEYS[3] (optional) the run's event stream (one slot:
--   `{runId}`).
-- ARGV[1] ttlSeconds, then with KEYS[3]: ARGV[2] maxLen, ARGV[3] eventType,
--   ARGV[4] sealedEventData, ARGV[5] channel, ARGV[6] message, ARGV[7] nowMs.
-- Returns {record, attempt | 0, journal}, hashes flattened.
local run = redis.call('HGETALL', KEYS[2])
if #run == 0 then return {run, 0, {}} end
-- status, cancelRequested and attempts from the fields just read (no command of their own)
local st, cancel, attempts
for i = 1, #run, 2 do
  local f = run[i]
  if f == 'status' then st = run[i + 1]
  elseif f == 'cancelRequested' then cancel = run[i + 1]
  elseif f == 'attempts' then attempts = run[i + 1] end
end
if st == 'Completed' or st == 'Failed' or st == 'Cancelled' then return {run, 0, {}} end
if cancel == '1' then return {run, 0, {}} end
local attempt = redis.call('HINCRBY', KEYS[1], '#attempt', 1)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
if KEYS[3] then
  -- the record's count in the same HSET as its status (the script is atomic: as exact as HINCRBY)
  redis.call('HSET', KEYS[2], 'attempts', (tonumber(attempts) or 0) + 1, 'status', 'Running', 'updatedAt', ARGV[7])
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'type', ARGV[3], 'data', ARGV[4], 'attempt', attempt)
  redis.call('PUBLISH', ARGV[5], ARGV[6])
else
  redis.call('HINCRBY', KEYS[2], 'attempts', 1)
end
return {run, attempt, redis.call('HGETALL', KEYS[1])}
