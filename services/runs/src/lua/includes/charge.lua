-- chargeBytes(key, bytes, expiresAt): counts `bytes` (> 0) more in a tenant's stored-bytes
-- counter (tenant-bytes-store.ts). Every charge of one counter gives the same expiry, so it is set
-- once, when the counter is new.
-- `bytes` goes to Redis as its own text when that is the digits Redis would print for it (a whole
-- number, no sign, no leading zero, below 2^52): Redis prints a Lua number argument with `%.17g`,
-- ~2,500 instructions (test/bench/README.md round 35, `end-lua`); the text is the same bytes.
local function chargeBytes(key, bytes, expiresAt)
  local n = tonumber(bytes)
  if n <= 0 then return end
  local by = n
  if #bytes < 16 and string.find(bytes, '^[1-9]%d*$') then by = bytes end
  if redis.call('INCRBY', key, by) == n then redis.call('EXPIREAT', key, expiresAt) end
end
