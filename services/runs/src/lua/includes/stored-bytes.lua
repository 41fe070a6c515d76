-- storedBytesOver(first, last, limit): the refusal of a tenant whose retained data holds its share
-- of Redis (tenant-bytes-store.ts: the sum of the counters of its buckets that may still hold live
-- data, KEYS[first..last]): 'over-storage <bytes>' once the sum reaches `limit` (bytes; '' = no
-- share: nothing read), else nil.
local function storedBytesOver(first, last, limit)
  if limit == '' then return nil end
  local names = {}
  for i = first, last do names[#names + 1] = KEYS[i] end
  local used = 0
  for _, c in ipairs(redis.call('MGET', unpack(names))) do used = used + (tonumber(c) or 0) end
  if used >= tonumber(limit) then return 'over-storage ' .. string.format('%.0f', used) end
  return nil
end
