-- end3Safe and end3Message: a format-2 end's `end3` push (includes/transition.lua), made only by
-- a write that may push one: included inside that branch, not at every call of a script that holds
-- the transition (round 50 `end-script`: two functions fewer a run's end).
-- Whether a pushed journal (name, value, ...) may go into `end3` (gateway call-journal.ts
-- `callsOfPushed`): a call's entry (`<index>`) and a layout-2 source (`#s:<id>`) spliced in as the
-- JSON they are stored as, not as JSON strings, so the message holds no escaped copy of them and
-- its reader parses it once; a counter (`#attempt`, `#seq`) as a string, as cjson writes it.
-- Nothing goes in unescaped that is not known safe there: a name is digits, `#attempt`, `#seq` or
-- `#s:` and base64url (claim-1.lua writes no other; a claim part `#c<index>` is not pushed), a
-- counter is digits, and an entry or source is an object, as the only writers of one write it
-- (cjson.encode in claim-1.lua and complete-2.lua, JSON.stringify in the gateway's call-journal.ts
-- `sourceJson`), every string in it (a tool's name, a connection's, a binding's) escaped by them.
-- Anything else, or no entry or source at all (counters alone: `end3` would be `end2`'s bytes
-- under a tag older gateways do not answer from): false, and the caller pushes `end2`, cjson
-- escaping every value.
local function end3Safe(journal)
  local spliced = false
  for i = 1, #journal - 1, 2 do
    local name, value = journal[i], journal[i + 1]
    if name == '#attempt' or name == '#seq' then
      if not string.find(value, '^%d+$') then return false end
    elseif string.find(name, '^%d+$') or string.find(name, '^#s:[%w_%-]+$') then
      if string.byte(value, 1) ~= 123 or string.byte(value, -1) ~= 125 then return false end
      spliced = true
    else
      return false
    end
  end
  return spliced
end
-- `<head>[<record>,[<journal>]]` of a journal `end3Safe` passed, built in place in `journal`: each
-- name and counter quoted, the head before the first name and `]]` after the last value, then one
-- table.concat with `,` (no table of pieces, one copy of the values; round 43 `format-43`).
local function end3Message(head, journal)
  local last = #journal
  for i = 1, last - 1, 2 do
    local name = journal[i]
    journal[i] = '"' .. name .. '"'
    if name == '#attempt' or name == '#seq' then journal[i + 1] = '"' .. journal[i + 1] .. '"' end
  end
  journal[1] = head .. journal[1]
  journal[last] = journal[last] .. ']]'
  return table.concat(journal, ',')
end
