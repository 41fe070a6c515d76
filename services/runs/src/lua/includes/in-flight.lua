-- What the in-flight quota counts: runs not ended (the in-flight set) plus skills whose
-- reservation is live at `now` (one definition for the count and the admission). `skillsLive`
-- false: the caller read the skills' marker (`<skills>:live`, reserve-skill-2.lua) and found none,
-- so no reservation can be live and the skills are not counted.
local function inFlight(inflight, skills, now, skillsLive)
  local n = redis.call('ZCARD', inflight)
  if skillsLive == false then return n end
  return n + redis.call('ZCOUNT', skills, '(' .. now, '+inf')
end
