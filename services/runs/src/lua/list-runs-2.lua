-- Newest-first candidates for a runs page.
-- KEYS[1] runs, KEYS[2] summaries.
-- ARGV[1] cursor score, ARGV[2] cursor id, ARGV[3] since, ARGV[4] until, ARGV[5] want, ARGV[6] scan
--   budget, ARGV[7] session, ARGV[8] principal, ARGV[9] style ('' = any), ARGV[10] final statuses
--   wanted (`*` any, comma-separated, '' none), ARGV[11] '1' when runs not yet ended are wanted
--   (their live status is checked by the caller).
-- Returns {summaries, position after the last one looked at ('' = the index ended), entries looked at}.
--- @include "run-final"
--- @include "scan-start"
local finals = {}
local anyFinal = ARGV[10] == '*'
for st in string.gmatch(ARGV[10], '[^,]+') do finals[st] = true end
local live = ARGV[11] == '1'
local out = {}
while scanned < budget do
  local chunk = math.min(200, budget - scanned)
  local rows = redis.call('ZREVRANGE', KEYS[1], start, start + chunk - 1, 'WITHSCORES')
  if #rows == 0 then return {out, '', scanned} end
  local ids = {}
  for i = 1, #rows, 2 do ids[#ids + 1] = rows[i] end
  local raws = redis.call('HMGET', KEYS[2], unpack(ids))
  for i = 1, #ids do
    local score = rows[i * 2]
    if since and tonumber(score) < since then return {out, '', scanned} end
    scanned = scanned + 1
    start = start + 1
    last = score .. ':' .. ids[i]
    local raw = raws[i]
    if raw then
      local s = cjson.decode(raw)
      local ok = (ARGV[7] == '' or s.sessionId == ARGV[7]) and (ARGV[8] == '' or s.principal == ARGV[8])
        and (ARGV[9] == '' or s.style == ARGV[9])
      if ok then
        if isFinal(s.status) then ok = anyFinal or finals[s.status] == true else ok = live end
      end
      if ok then
        out[#out + 1] = raw
        if #out >= want then return {out, last, scanned} end
      end
    end
  end
  if #ids < chunk then return {out, '', scanned} end
end
return {out, last, scanned}
