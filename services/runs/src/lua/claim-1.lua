-- Claims calls of one run for one attempt, one reply per call, in order: the calls one after
-- another, as separate scripts would.
-- KEYS[1] journal hash.
-- ARGV: CLAIM_FIELDS per call, each: field, attempt, binding, argsHash, sealedArgs,
--   sourceJson, operationId, nowMs, takeover ('1'|'0'), ttlSeconds, token, sendNow ('1'|'0').
-- With sendNow a `new` claim is written as `sent` in the same step (claim + markSent fused: the
-- caller sends without asking anyone first, so nothing can come between the two).
-- Replies per call: {'new'}, {'done', sealedOutcome, deliverySeq}, {'in-flight'}, {'unknown'},
-- {'superseded'}, {'mismatch', binding}.
-- One HMGET reads `#attempt` (no claim changes it) and every call's entry, one HSET writes the
-- claimed ones: two commands for a group of any size. A call claimed earlier in the same group
-- is read from `written`, so a group behaves exactly as its claims one after another.
local fields = {'#attempt'}
for b = 0, #ARGV - 1, ${CLAIM_FIELDS} do fields[#fields + 1] = ARGV[b + 1] end
local got = redis.call('HMGET', KEYS[1], unpack(fields))
local current = tonumber(got[1] or '0')
local written, order = {}, {}
local ttl
local function put(field, e, ttlSeconds)
  if not written[field] then order[#order + 1] = field end
  written[field] = cjson.encode(e)
  ttl = ttlSeconds
end
local function claim(b, stored)
  local attempt = tonumber(ARGV[b + 2])
  local claimed = 'pending'
  if ARGV[b + 12] == '1' then claimed = 'sent' end
  if attempt < current then return {'superseded'} end
  local raw = written[ARGV[b + 1]] or stored
  if not raw then
    local e = {i = tonumber(ARGV[b + 1]), b = ARGV[b + 3], h = ARGV[b + 4], a = ARGV[b + 5], op = ARGV[b + 7],
      st = claimed, at = attempt, tk = ARGV[b + 11], t0 = tonumber(ARGV[b + 8])}
    if ARGV[b + 6] ~= '' then e.s = ARGV[b + 6] end
    put(ARGV[b + 1], e, ARGV[b + 10])
    return {'new'}
  end
  local e = cjson.decode(raw)
  if e.b ~= ARGV[b + 3] or e.h ~= ARGV[b + 4] then return {'mismatch', e.b} end
  if e.st == 'done' then return {'done', e.o, tostring(e.seq)} end
  if e.at > attempt then return {'superseded'} end
  if e.at == attempt and ARGV[b + 9] ~= '1' then return {'in-flight'} end
  if e.st == 'pending' then
    e.st = claimed
    e.at = attempt
    e.tk = ARGV[b + 11]
    e.t0 = tonumber(ARGV[b + 8])
    put(ARGV[b + 1], e, ARGV[b + 10])
    return {'new'}
  end
  return {'unknown'}
end
local replies = {}
for b = 0, #ARGV - 1, ${CLAIM_FIELDS} do
  replies[#replies + 1] = claim(b, got[#replies + 2])
end
if #order > 0 then
  local args = {}
  for _, field in ipairs(order) do
    args[#args + 1] = field
    args[#args + 1] = written[field]
  end
  redis.call('HSET', KEYS[1], unpack(args))
  -- nextAttempt set the expiry with #attempt (and complete renews it): only a journal that
  -- nextAttempt never touched needs one here.
  if current == 0 then redis.call('EXPIRE', KEYS[1], tonumber(ttl)) end
end
return replies
