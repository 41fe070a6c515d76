-- A claimed call is about to be sent.
-- KEYS[1] journal hash. ARGV[1] field, ARGV[2] token ('' = unchecked).
-- Returns 'sent', 'missing', 'conflict' (taken over by another handler) or the entry's state.
-- Both layouts (claim-1.lua): an entry without `tk` keeps its token as its claim part's first word.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 'missing' end
local e = cjson.decode(raw)
if ARGV[2] ~= '' then
  local tk = e.tk
  if tk == nil then
    local part = redis.call('HGET', KEYS[1], '#c' .. ARGV[1]) or ''
    tk = string.sub(part, 1, (string.find(part, ' ', 1, true) or (#part + 1)) - 1)
  end
  if tk ~= ARGV[2] then return 'conflict' end
end
if e.st ~= 'pending' then return e.st end
e.st = 'sent'
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(e))
return 'sent'
