-- A claimed call is about to be sent.
-- KEYS[1] journal hash. ARGV[1] field, ARGV[2] token ('' = unchecked).
-- Returns 'sent', 'missing', 'conflict' (taken over by another handler) or the entry's state.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 'missing' end
local e = cjson.decode(raw)
if ARGV[2] ~= '' and e.tk ~= ARGV[2] then return 'conflict' end
if e.st ~= 'pending' then return e.st end
e.st = 'sent'
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(e))
return 'sent'
