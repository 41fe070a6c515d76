-- isFinal(status): whether a status is final.
local function isFinal(status)
  return status == 'Completed' or status == 'Failed' or status == 'Cancelled'
end
