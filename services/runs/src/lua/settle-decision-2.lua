-- Answers (or expires) a pending decision once, and wakes its waiters.
-- KEYS[1] run's decisions hash, KEYS[2] answer wake-up list.
-- ARGV[1] field, ARGV[2] tenant ('' = any), ARGV[3] newState, ARGV[4] sealedAnswer,
--   ARGV[5] ttlSeconds (the run's retention).
-- Returns {'ok', stored, pendingLeft}, {'not-found'} or {'conflict', state}.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'not-found'} end
local d = cjson.decode(raw)
if ARGV[2] ~= '' and d.tenant ~= ARGV[2] then return {'not-found'} end
if d.state ~= 'pending' then return {'conflict', d.state} end
d.state = ARGV[3]
if ARGV[4] ~= '' then d.ans = ARGV[4] end
local encoded = cjson.encode(d)
redis.call('HSET', KEYS[1], ARGV[1], encoded)
local ttl = tonumber(ARGV[5])
if ARGV[3] == 'expired' then
  -- An expiry ends the run (cancelled; closeRun settles the rest of an ended run's the same way):
  -- its decisions are kept one retention from now, as its record from its end.
  redis.call('EXPIRE', KEYS[1], ttl)
else
  -- An answer: the run goes on. The request kept the hash for its wait plus one retention
  -- (decision-store.ts); an answer never shortens that, so a live run's decisions outlast it by a
  -- retention at least. It lengthens one with less than a retention left (one 6b60376a's request
  -- set, one retention from that request), or with none (no writer leaves one, but never a leak).
  -- PTTL in place of the EXPIRE it was: the same count of commands, on any Redis (EXPIRE's GT is 7.0's).
  if redis.call('PTTL', KEYS[1]) < ttl * 1000 then redis.call('EXPIRE', KEYS[1], ttl) end
end
redis.call('RPUSH', KEYS[2], ARGV[3])
-- The wake-up list only wakes a waiter blocked on it (one re-reads the hash first): one retention
-- from the settle, which comes before the run's end.
redis.call('EXPIRE', KEYS[2], ttl)
local pending = 0
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do
  if cjson.decode(v).state == 'pending' then pending = pending + 1 end
end
return {'ok', encoded, pending}
