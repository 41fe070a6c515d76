-- poolQuota(slots, share, cap[, now]): Redis's time (ms; read here unless given), the pool's live
-- slots (the sum over runners registered in `slots`, a HASH runner → `<slots>:<expiry ms>`; lapsed
-- registrations are dropped) and a tenant's share under contention: max(1, floor(live slots ×
-- share)), at most `cap` when set.
local function poolQuota(slots, share, cap, now)
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local total = 0
  local rows = redis.call('HGETALL', slots)
  for i = 1, #rows, 2 do
    local n, exp = string.match(rows[i + 1], '^(%d+):(%d+)$')
    if n and tonumber(exp) > now then total = total + tonumber(n)
    else redis.call('HDEL', slots, rows[i]) end
  end
  if total < 1 then total = 1 end
  local quota = math.floor(total * share + 1e-9)
  if quota < 1 then quota = 1 end
  if cap > 0 and cap < quota then quota = cap end
  return now, total, quota
end
