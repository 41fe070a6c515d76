-- storedBytesOver(first, last, limit, extra): the refusal of a tenant whose retained data holds its
-- share of Redis (tenant-bytes-store.ts: the sum of the counters of its buckets that may still hold
-- live data, KEYS[first..last]): 'over-storage <bytes>' once the sum reaches `limit` (bytes; '' = no
-- share: the counters not read), else nil; and the value of each key named in `extra` (false:
-- none), read in the same MGET (its own without a share).
local function storedBytesOver(first, last, limit, extra)
  local names = {}
  -- Copied by unpack (the table made at its size, not grown key by key).
  if limit ~= '' then names = {unpack(KEYS, first, last)} end
  local from = #names
  for _, name in ipairs(extra) do names[#names + 1] = name end
  local got = redis.call('MGET', unpack(names))
  local found = {}
  for i = 1, #extra do found[i] = got[from + i] end
  if limit == '' then return nil, found end
  local used = 0
  for i = 1, from do used = used + (tonumber(got[i]) or 0) end
  if used >= tonumber(limit) then return 'over-storage ' .. string.format('%.0f', used), found end
  return nil, found
end
