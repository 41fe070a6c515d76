-- Where a newest-first scan of a ZSET (KEYS[1]) starts, as a local `start` (a rank): after the
-- cursor's entry (ARGV[1] score, ARGV[2] member; by score when the member has left), and not before
-- `until` (ARGV[4], exclusive). Also sets `since` (ARGV[3]), `want` (ARGV[5]), `budget` (ARGV[6]),
-- `scanned` and `last`.
local start = 0
if ARGV[1] ~= '' then
  local r = redis.call('ZREVRANK', KEYS[1], ARGV[2])
  if r then start = r + 1 else start = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf') end
end
if ARGV[4] ~= '' then
  local u = redis.call('ZCOUNT', KEYS[1], ARGV[4], '+inf')
  if u > start then start = u end
end
local since = tonumber(ARGV[3])
local want = tonumber(ARGV[5])
local budget = tonumber(ARGV[6])
local scanned = 0
local last = ''
