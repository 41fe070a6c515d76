-- chargeBytes(key, bytes, expiresAt): counts `bytes` (> 0) more in a tenant's stored-bytes
-- counter (tenant-bytes-store.ts). Every charge of one counter gives the same expiry, so it is set
-- once, when the counter is new.
local function chargeBytes(key, bytes, expiresAt)
  local n = tonumber(bytes)
  if n > 0 and redis.call('INCRBY', key, n) == n then redis.call('EXPIREAT', key, expiresAt) end
end
