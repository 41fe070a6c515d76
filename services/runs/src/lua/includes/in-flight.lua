-- What the in-flight quota counts: runs not ended (the in-flight set) plus skills whose
-- reservation is live at `now` (one definition for the count and the admission).
local function inFlight(inflight, skills, now)
  return redis.call('ZCARD', inflight) + redis.call('ZCOUNT', skills, '(' .. now, '+inf')
end
