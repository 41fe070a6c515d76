-- Stores calls' outcomes, assigning each its delivery sequence; one reply per call, in order.
-- KEYS[1] journal hash, KEYS[2] (optional) the run's event stream.
-- With KEYS[2]: ARGV[1] maxLen, ARGV[2] channel, ARGV[3] message; then
--   per call (COMPLETE_FIELDS): field, sealedOutcome, nowMs, and with KEYS[2]
--   eventType, sealedEventData, eventMs (empty fields without it).
-- A call event's one-seal form (eventMs not empty, ISLET_CALL_ONE_SEAL): the entry is `type`,
-- `i` (the call's field) and `ms`, no `data`; its reader takes the rest from this journal's
-- entry (call-event-reads.ts), whose outcome is the one sealed here.
-- A call's event is appended only when this call stored the outcome (never for a kept one), in
-- the same step, so the answer to the runner waits for one round trip, not two; one PUBLISH wakes
-- the stream's readers for all the events appended.
-- One HMGET reads `#seq` and every call's entry, one HSET writes the stored outcomes and the new
-- `#seq`: two commands for a group of any size (plus the events). A call stored earlier in the
-- same group is read from `written`, so a group behaves exactly as its calls one after another.
-- Replies per call: {'stored', seq}, {'kept', seq} or {'missing'}.
-- No expiry is set (round 46 `journal-life`): a live run's journal has none (lua/claim-1.lua), its
-- run's end gives it the record's, and an outcome stored after the end (a cancelled run's call)
-- keeps that one (HSET leaves a key's expiry). An outcome never creates the journal (`missing`).
-- An entry is rewritten as text (round 44 `outcome-script`), not decoded and re-encoded by cjson
-- (its number formatting and strings cost Redis ~20 k instructions a call): its state's value
-- spliced to `done` and `,"o":"<sealed>","seq":<n>,"t1":<ms>` put before its closing brace, the
-- rest kept as stored. Found as text: in JSON an unescaped `"`, a name, `"` and `:` is a key (a
-- string's own quotes are escaped) and an entry's keys are fixed names, so `"st":"` is its state
-- and `"seq":` its sequence. The values cjson would write, in another key order (every reader
-- parses the JSON: complete-splice.test.ts runs e8feb7a0's readers over both), taken only when
-- cjson would write those values' text alike: an integer time of at most 14 digits (cjson's
-- precision) and a sealed outcome with nothing cjson escapes (a sealer's is base64url and `.`).
local first = 1
if KEYS[2] then first = 4 end
local fields = {'#seq'}
for b = first - 1, #ARGV - 1, ${COMPLETE_FIELDS} do fields[#fields + 1] = ARGV[b + 1] end
local got = redis.call('HMGET', KEYS[1], unpack(fields))
local seq = tonumber(got[1] or '0')
local written, order = {}, {}
local replies = {}
local appended = false
for b = first - 1, #ARGV - 1, ${COMPLETE_FIELDS} do
  local field = ARGV[b + 1]
  local raw = written[field] or got[#replies + 2]
  if not raw then
    replies[#replies + 1] = {'missing'}
  else
    local s = string.find(raw, '"st":"', 1, true)
    local o, t1 = ARGV[b + 2], ARGV[b + 3]
    if s and string.sub(raw, s + 6, s + 10) == 'done"' then
      replies[#replies + 1] = {'kept', string.match(raw, '^%d+', (string.find(raw, '"seq":', 1, true) or 0) + 6)}
    else
      seq = seq + 1
      local seqText = tostring(seq)
      local text
      if s and #t1 <= 14 and string.find(t1, '^[1-9]%d*$') and not string.find(o, '"', 1, true)
          and not string.find(o, '\\', 1, true) and string.byte(raw, -1) == 125 then
        text = string.sub(raw, 1, s + 5) .. 'done' .. string.sub(raw, string.find(raw, '"', s + 6, true), -2)
          .. ',"o":"' .. o .. '","seq":' .. seqText .. ',"t1":' .. t1 .. '}'
      else
        local e = cjson.decode(raw)
        e.st = 'done'
        e.o = o
        e.seq = seq
        e.t1 = tonumber(t1)
        text = cjson.encode(e)
      end
      if not written[field] then order[#order + 1] = field end
      written[field] = text
      if KEYS[2] then
        if ARGV[b + 6] ~= '' then
          redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'type', ARGV[b + 4], 'i', field, 'ms', ARGV[b + 6])
        else
          redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'type', ARGV[b + 4], 'data', ARGV[b + 5])
        end
        appended = true
      end
      replies[#replies + 1] = {'stored', seqText}
    end
  end
end
if #order > 0 then
  local args = {'#seq', tostring(seq)}
  for _, f in ipairs(order) do
    args[#args + 1] = f
    args[#args + 1] = written[f]
  end
  redis.call('HSET', KEYS[1], unpack(args))
end
if appended then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return replies
