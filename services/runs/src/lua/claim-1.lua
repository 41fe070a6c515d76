-- Claims calls of one run for one attempt, one reply per call, in order: the calls one after
-- another, as separate scripts would.
-- KEYS[1] journal hash.
-- ARGV: CLAIM_FIELDS per call, each: field, attempt, binding, argsHash, sealedArgs,
--   sourceJson, operationId, nowMs, takeover ('1'|'0'), ttlSeconds, token, sendNow ('1'|'0').
-- With sendNow a `new` claim is written as `sent` in the same step (claim + markSent fused: the
-- caller sends without asking anyone first, so nothing can come between the two).
-- Replies per call: {'new'}, {'done', sealedOutcome, deliverySeq}, {'in-flight'}, {'unknown'},
-- {'superseded'}, {'mismatch', binding}.
local function claim(b)
  local attempt = tonumber(ARGV[b + 2])
  local claimed = 'pending'
  if ARGV[b + 12] == '1' then claimed = 'sent' end
  local current = tonumber(redis.call('HGET', KEYS[1], '#attempt') or '0')
  if attempt < current then return {'superseded'} end
  local raw = redis.call('HGET', KEYS[1], ARGV[b + 1])
  if not raw then
    local e = {i = tonumber(ARGV[b + 1]), b = ARGV[b + 3], h = ARGV[b + 4], a = ARGV[b + 5], op = ARGV[b + 7],
      st = claimed, at = attempt, tk = ARGV[b + 11], t0 = tonumber(ARGV[b + 8])}
    if ARGV[b + 6] ~= '' then e.s = ARGV[b + 6] end
    redis.call('HSET', KEYS[1], ARGV[b + 1], cjson.encode(e))
    -- nextAttempt set the expiry with #attempt (and complete renews it): only a journal that
    -- nextAttempt never touched needs one here.
    if current == 0 then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[b + 10])) end
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
    redis.call('HSET', KEYS[1], ARGV[b + 1], cjson.encode(e))
    if current == 0 then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[b + 10])) end
    return {'new'}
  end
  return {'unknown'}
end
local replies = {}
for b = 0, #ARGV - 1, ${CLAIM_FIELDS} do replies[#replies + 1] = claim(b) end
return replies
