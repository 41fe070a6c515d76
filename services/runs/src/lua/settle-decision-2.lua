-- Answers (or expires) a pending decision once, and wakes its waiters.
-- KEYS[1] run's decisions hash, KEYS[2] answer wake-up list.
-- ARGV[1] field, ARGV[2] tenant ('' = any), ARGV[3] newState, ARGV[4] sealedAnswer,
--   ARGV[5] ttlSeconds.
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
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[5]))
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[5]))
local pending = 0
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do
  if cjson.decode(v).state == 'pending' then pending = pending + 1 end
end
return {'ok', encoded, pending}
