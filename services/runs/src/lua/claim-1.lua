-- Claims calls of one run for one attempt, one reply per call, in order: the calls one after
-- another, as separate scripts would.
-- KEYS[1] journal hash, KEYS[2] the run's record (one slot: `{runId}`; read for its expiry alone).
-- ARGV[1] the layout a new entry is written in ('1' | '2', ISLET_WRITE_FORMAT); then
--   CLAIM_FIELDS per call, each: field, attempt, binding, argsHash, sealedArgs,
--   sourceJson, operationId, nowMs, takeover ('1'|'0'), token, sendNow ('1'|'0'),
--   sourceId ('' in layout 1).
-- The journal has no expiry while its run lives (round 46 `journal-life`): a run may wait past any
-- retention (a decision's 24 h, a slow App), and a replay after a runner's loss answers its calls
-- from here, so a journal gone would re-send them. The run's end expires it with the record and
-- events (includes/transition.lua). A first attempt's claim (no `#attempt`: the only one that can
-- create the journal) reads the record's expiry: none, the run lives; one, the run ended before this
-- claim (a straggling execution, an end with no journal to expire) and the journal takes the
-- record's; no record (a run past retention), ORPHAN_MS.
-- Layout 1: the entry at `<index>` holds every field. Layout 2: the call's claim part (token, argument
-- hash, sealed arguments: `<tk> <h> <a>`, none holds a space) is field `#c<index>` and the entry at
-- `<index>` holds only what a run's answer reads, so a run's pushed end (includes/transition.lua)
-- carries no claim part; its source (the same text for every call of a binding) is written once a
-- journal, at `#s:<sourceId>`, the entry's `s` being `<sourceId>`. Both layouts are read whatever
-- ARGV[1]; an entry keeps the layout it was created in.
-- With sendNow a `new` claim is written as `sent` in the same step (claim + markSent fused: the
-- caller sends without asking anyone first, so nothing can come between the two).
-- Replies per call, one string each (round 45: a table a call cost Redis's reply ~4 k instructions,
-- its field checks each a Lua string made): 'new', 'done <deliverySeq> <sealedOutcome>', 'in-flight',
-- 'unknown', 'superseded', 'mismatch <binding>' (what follows the first or second space is the
-- value whole, spaces included).
-- One HMGET reads `#attempt` (no claim changes it), every call's entry and in layout 2 whether each
-- source of the group is written, one HSET writes the claimed ones: two commands for a group of any
-- size. A layout-2 entry claimed again reads its claim part with an HGET of its own (a replay's or a
-- takeover's, not a first claim's). A call claimed earlier in the same group is read from `written`,
-- so a group behaves exactly as its claims one after another.
-- A new layout-2 entry is written as text (round 45 `claim-text`), not by `cjson.encode` of a table
-- (13.4 k of Redis's instructions a call, 7.6 k of them its three numbers' `%.14g` by snprintf; the
-- text ~7 k): the bytes cjson writes, in cjson's key order for this table (Lua 5.1's string hash
-- has no seed, so a table built alike iterates alike), each string value escaped by
-- `cjson.encode` of the string itself (any bytes: quotes, backslashes, `/`, control characters
-- escaped as cjson does, bytes from 0x80 kept), each number its ARGV text when cjson would write
-- that text (`int14`); otherwise the table and cjson, as before. claim-text.test.ts holds the bytes
-- to those 9ec25e04's script writes. Layout 1 (not the default) and a claim of a stored entry
-- (decode + encode) are left to cjson.
local split = ARGV[1] == '2'
local fields = {'#attempt'}
for b = 1, #ARGV - 1, ${CLAIM_FIELDS} do fields[#fields + 1] = ARGV[b + 1] end
-- Layout 2: each source's field named and read once a group (a binding's calls share one), where
-- it is found in `got` by its id.
local sourceField, sourceAt = {}, {}
if split then
  for b = 1, #ARGV - 1, ${CLAIM_FIELDS} do
    local id = ARGV[b + 12]
    if not sourceField[id] then
      sourceField[id] = '#s:' .. id
      fields[#fields + 1] = sourceField[id]
      sourceAt[id] = #fields
    end
  end
end
local got = redis.call('HMGET', KEYS[1], unpack(fields))
local current = tonumber(got[1] or '0')
local written, order = {}, {}
-- A journal written for a run whose record is gone expires this soon (the least retention).
local ORPHAN_MS = 60000
-- No function is made here (round 49 `binding-hop`): Redis runs this body at every call, so each
-- `local function` in it was a closure made again each time, with a lookup of each enclosing local
-- it reads (four: the claim, its write and the two number checks). Each call's claim is the body of
-- a one-pass `repeat` (a `do break end` is its `return`), a write is written out where it is made
-- (`written` keeps the field's text; `order` its first write), and a number's check is in line.
-- Whether cjson writes the number a text is as the text itself: an integer in its shortest form
-- of at most 14 digits (cjson's precision, `%.14g`: `Date.now()` is 13). A group's calls mostly
-- share their attempt and their time, so those two are checked once a text (`ints`).
local find, sub, encode = string.find, string.sub, cjson.encode
local ints = {}
local replies = {}
for b = 1, #ARGV - 1, ${CLAIM_FIELDS} do
  local stored = got[#replies + 2]
  local storedSource = split and got[sourceAt[ARGV[b + 12]]]
  local reply
  repeat
    local attempt = tonumber(ARGV[b + 2])
    local claimed = 'pending'
    if ARGV[b + 11] == '1' then claimed = 'sent' end
    if attempt < current then
      reply = 'superseded'
      do break end
    end
    local field = ARGV[b + 1]
    local raw = written[field] or stored
    if not raw then
      local e
      if split then
        local part = '#c' .. field
        if not written[part] then order[#order + 1] = part end
        written[part] = ARGV[b + 10] .. ' ' .. ARGV[b + 4] .. ' ' .. ARGV[b + 5]
        local s
        if ARGV[b + 12] ~= '' then
          local sf = sourceField[ARGV[b + 12]]
          if not (written[sf] or storedSource) then
            order[#order + 1] = sf
            written[sf] = ARGV[b + 6]
          end
          s = ARGV[b + 12]
        elseif ARGV[b + 6] ~= '' then
          s = ARGV[b + 6]
        end
        -- The entry as text, byte for byte what cjson.encode writes of the table below (see the header).
        local t0, at = ARGV[b + 8], ARGV[b + 2]
        local atOk, t0Ok = ints[at], ints[t0]
        if atOk == nil then
          atOk = at == '0' or (#at <= 14 and find(at, '^[1-9]%d*$') ~= nil)
          ints[at] = atOk
        end
        if t0Ok == nil then
          t0Ok = t0 == '0' or (#t0 <= 14 and find(t0, '^[1-9]%d*$') ~= nil)
          ints[t0] = t0Ok
        end
        if (field == '0' or (#field <= 14 and find(field, '^[1-9]%d*$') ~= nil)) and atOk and t0Ok then
          local text
          if s then
            text = '{"i":' .. field .. ',"op":' .. encode(ARGV[b + 7]) .. ',"t0":' .. t0 .. ',"b":'
              .. encode(ARGV[b + 3]) .. ',"s":' .. encode(s) .. ',"st":"' .. claimed .. '","at":'
              .. at .. '}'
          else
            text = '{"i":' .. field .. ',"op":' .. encode(ARGV[b + 7]) .. ',"t0":' .. t0 .. ',"b":'
              .. encode(ARGV[b + 3]) .. ',"st":"' .. claimed .. '","at":' .. at .. '}'
          end
          if not written[field] then order[#order + 1] = field end
          written[field] = text
          reply = 'new'
          do break end
        end
        e = {i = tonumber(field), b = ARGV[b + 3], op = ARGV[b + 7], st = claimed, at = attempt,
          t0 = tonumber(t0)}
        if s then e.s = s end
      else
        -- Layout 1's table built as the previous release builds it (cjson's key order follows it).
        e = {i = tonumber(field), b = ARGV[b + 3], h = ARGV[b + 4], a = ARGV[b + 5], op = ARGV[b + 7],
          st = claimed, at = attempt, tk = ARGV[b + 10], t0 = tonumber(ARGV[b + 8])}
        if ARGV[b + 6] ~= '' then e.s = ARGV[b + 6] end
      end
      if not written[field] then order[#order + 1] = field end
      written[field] = encode(e)
      reply = 'new'
      do break end
    end
    local e = cjson.decode(raw)
    -- Layout 2 (no `h` in the entry): the hash is the claim part's second word.
    local part, h, partField
    if e.h == nil then
      partField = '#c' .. field
      part = written[partField] or redis.call('HGET', KEYS[1], partField) or ''
      local s1 = find(part, ' ', 1, true) or #part
      local s2 = find(part, ' ', s1 + 1, true) or (#part + 1)
      h = sub(part, s1 + 1, s2 - 1)
    else
      h = e.h
    end
    if e.b ~= ARGV[b + 3] or h ~= ARGV[b + 4] then
      reply = 'mismatch ' .. (e.b or '')
    elseif e.st == 'done' then
      reply = 'done ' .. tostring(e.seq) .. ' ' .. (e.o or '')
    elseif e.at > attempt then
      reply = 'superseded'
    elseif e.at == attempt and ARGV[b + 9] ~= '1' then
      reply = 'in-flight'
    elseif e.st == 'pending' then
      e.st = claimed
      e.at = attempt
      e.t0 = tonumber(ARGV[b + 8])
      if part then
        if not written[partField] then order[#order + 1] = partField end
        written[partField] = ARGV[b + 10] .. sub(part, (find(part, ' ', 1, true) or (#part + 1)))
      else
        e.tk = ARGV[b + 10]
      end
      if not written[field] then order[#order + 1] = field end
      written[field] = encode(e)
      reply = 'new'
    else
      reply = 'unknown'
    end
  until true
  replies[#replies + 1] = reply
end
if #order > 0 then
  local args = {}
  for _, field in ipairs(order) do
    args[#args + 1] = field
    args[#args + 1] = written[field]
  end
  redis.call('HSET', KEYS[1], unpack(args))
  -- A journal with `#attempt` was made by a later attempt's start, which only a live run gets; its
  -- run's end expires it. Without (a first attempt's): the record's expiry says (header).
  if current == 0 then
    local left = redis.call('PTTL', KEYS[2])
    if left ~= -1 then
      if left < 0 then left = ORPHAN_MS elseif left == 0 then left = 1 end
      redis.call('PEXPIRE', KEYS[1], left)
    end
  end
end
return replies
