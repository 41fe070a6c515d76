-- A sessions page, latest activity first.
-- KEYS[1] sessions, KEYS[2] session stats.
-- ARGV[1] cursor score, ARGV[2] cursor session, ARGV[3] since, ARGV[4] until (last activity),
--   ARGV[5] want, ARGV[6] scan budget, ARGV[7] principal ('' = any).
-- Returns {[session, last activity, field, value, …], position after the last one ('' = none left)}.
--- @include "scan-start"
local fields = {'total', 'Completed', 'Failed', 'Cancelled', 'principal', 'created'}
local out = {}
while scanned < budget do
  local chunk = math.min(200, budget - scanned)
  local rows = redis.call('ZREVRANGE', KEYS[1], start, start + chunk - 1, 'WITHSCORES')
  if #rows == 0 then return {out, ''} end
  for i = 1, #rows, 2 do
    local session, score = rows[i], rows[i + 1]
    if since and tonumber(score) < since then return {out, ''} end
    scanned = scanned + 1
    start = start + 1
    last = score .. ':' .. session
    local names = {}
    for j, f in ipairs(fields) do names[j] = session .. '\n' .. f end
    local values = redis.call('HMGET', KEYS[2], unpack(names))
    if ARGV[7] == '' or values[5] == ARGV[7] then
      local row = {session, score}
      for j, f in ipairs(fields) do
        if values[j] then
          row[#row + 1] = f
          row[#row + 1] = values[j]
        end
      end
      out[#out + 1] = row
      if #out >= want then return {out, last} end
    end
  end
  if #rows < chunk * 2 then return {out, ''} end
end
return {out, last}
