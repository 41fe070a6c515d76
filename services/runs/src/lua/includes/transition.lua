-- writeTransition(k, a, f, push, old, before, firstOnly, d): a run's status change, once the caller saw
-- it is not final (its status `old`; `before`: the record as the caller read it whole, or nil).
-- `firstOnly`: the caller knows the journal holds its first attempt's count alone (no call was ever
-- sent: includes/finish-run.lua), so the push carries it as it must be, unread.
-- KEYS[k] run record, KEYS[k+1] events, KEYS[k+2] the run's journal (read with `push`; given an
--   end, expired with the record and events, whether pushed or not), KEYS[d] (`d`, optional) the
--   run's decisions (expired with them at an end).
-- ARGV[a] message (the run id, then optionally a space and a tag), ARGV[a+1] channel,
--   ARGV[a+2] eventType, ARGV[a+3] sealedEventData, ARGV[a+4] maxlen, ARGV[a+5] ttlSeconds,
--   ARGV[f..] field, value, ...
-- A final status with `push` publishes `<id> end2 [record, journal]` (both hashes flattened, as
-- cjson encodes them: an empty one is `{}`) when they fit ${END_PUSH_MAX_BYTES} bytes, so a gateway
-- waiting for the run answers it without reading them back. The record pushed is its fields a run
-- changes after its submit (END_FIELDS), not those the submit wrote, which every waiter holds as
-- the run it waits on (its submit's, or its read): the program and request (`pick`, or `code` and
-- `request`) and description, ~50 % of a trivial run's push, and the submit's plain fields (round
-- 41 `push-lean`). The tag is `end2`, not the previous releases' `end` (the whole record): a
-- gateway of those releases takes any other tag for "the run changed" and reads the run back, so it
-- never builds an answer from a push without the program. With `before` the record pushed is
-- `before` with this write applied as HSET applies it (no second read), less the write's
-- `timings`, which no reader of a push reads. `push` 3 (format 2; `true` or 2: `end2` only) pushes
-- `<id> end3 [record, journal]` instead when the journal has calls and the sizes summed are at
-- least ${END3_MIN_BYTES} bytes: its entries and sources as JSON values (`end3Safe`). Read since a0565cd2
-- (round 42's `callsOfPushed`), so a gateway of that release answers it from the push too; a
-- gateway of an older one takes the tag for "the run changed" and reads the run back.
-- Returns the status the write leaves (the old one when no status is given), and the id of the
-- event it appended (`<ms>-<n>`: Redis's clock, as TIME reads it, or later than the stream's last
-- entry should that clock have stepped back).
--- @include "event-add"
local function writeTransition(k, a, f, push, old, before, firstOnly, d)
  local last = #ARGV
  local newStatus = old
  -- the status this write leaves (the last one given wins, as in HSET), without reading it back
  for i = f, last - 1, 2 do
    if ARGV[i] == 'status' then newStatus = ARGV[i + 1] end
  end
  -- The fields straight from ARGV (unpack is C): a copy made element by element, and the record's
  -- copy and name table below, were ~50,000 of the end script's ~690,000 instructions a call
  -- (callgrind, test/bench/README.md round 35 `end-gw`).
  redis.call('HSET', KEYS[k], unpack(ARGV, f, last))
  local ended = newStatus == 'Completed' or newStatus == 'Failed' or newStatus == 'Cancelled'
  if ended then
    -- The run's decisions (decision-store.ts) go one retention after its end, as its record does
    -- (round 48): a request keeps them for its wait plus a retention, which a run answered early
    -- and ended soon would otherwise outlive its record by (up to a decision's wait). Only a final
    -- status gets here: a move to Waiting (a decision's stop, a round's job ended) or Running keeps
    -- them. Sent unless the caller left `d` out, knowing the run has none (no record field says it
    -- asked: the runner's first plain attempt that sent no call and asked no wider access, round 48
    -- run-store-args.ts `endModeArg`); on a key that does not exist an EXPIRE writes nothing. First, so they are gone at the record's instant or before it, never after
    -- (Redis 7.0 reads its clock for each EXPIRE). A settle after this end (closeRun's expiry of a
    -- decision left pending) sets one retention from itself, as before.
    if d then redis.call('EXPIRE', KEYS[d], ARGV[a + 5]) end
    redis.call('EXPIRE', KEYS[k], ARGV[a + 5])
    redis.call('EXPIRE', KEYS[k + 1], ARGV[a + 5])
    -- The journal expires with the stream: a `call` event's one-seal form (complete-2.lua) holds
    -- its call's index alone, its data read from the journal (call-event-reads.ts). Same script,
    -- after the stream's: at its instant or a few ms later, never before (Redis 7.0 reads the clock
    -- for each EXPIRE, even inside a script; 7.2 freezes it for the script). While the run lived the journal had no expiry (round 46:
    -- claim-1.lua; a 9f886855 process's claim or complete set one retention from its write); an
    -- outcome after the end (a cancelled run's call) keeps this one, and a claim that creates the
    -- journal after it takes the record's. Not sent when no call was ever made (`firstOnly`: the
    -- journal does not exist).
    if KEYS[k + 2] and not firstOnly then redis.call('EXPIRE', KEYS[k + 2], ARGV[a + 5]) end
  end
  -- `firstOnly`: a first attempt that sent no call: its stream holds its create's and start's events
  -- and those of decisions before it.
  local at = eventAdd(KEYS[k + 1], ARGV[a + 4], firstOnly, 'type', ARGV[a + 2], 'data', ARGV[a + 3])
  local message = ARGV[a]
  if ended and push then
    -- The record's fields a waiter reads from the push (gateway runs-service.ts `endOf`, run-reads.ts
    -- `fromLeanEnd`): those an execution or its end writes. The others are the submit's.
    local END_FIELDS = {
      id = true, status = true, updatedAt = true, attempts = true, cancelRequested = true,
      kind = true, ended = true, result = true, text = true, textRef = true,
    }
    -- Made with room for END_FIELDS' ten pairs (a table made empty is rehashed at its 1st, 2nd,
    -- 4th, 8th and 16th element; round 50 `end-script`); cjson reads its n entries alone.
    local run = {nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}
    local n = 0
    if before then
      -- `before` (read for this write alone) with the write applied: a field it has takes the value
      -- the write's last mention of it gives, as HSET does; the others are appended once each, with
      -- that value. The names looked up are the write's few and END_FIELDS, not the record's ~25.
      -- (`timings`, the runner's stage stamps, is not one: no reader of a push reads them.)
      -- END_FIELDS itself notes the write: a name of it the write gives holds the position of its
      -- last mention (`true`: not written; `false`: taken from `before` already), so no table of
      -- the write's names is made (round 50 `end-script`).
      for i = f, last - 1, 2 do
        if END_FIELDS[ARGV[i]] ~= nil then END_FIELDS[ARGV[i]] = i end
      end
      for j = 1, #before - 1, 2 do
        local name = before[j]
        local i = END_FIELDS[name]
        if i then
          run[n + 1] = name
          if i == true then
            run[n + 2] = before[j + 1]
          else
            run[n + 2] = ARGV[i + 1]
            END_FIELDS[name] = false
          end
          n = n + 2
        end
      end
      for i = f, last - 1, 2 do
        local name = ARGV[i]
        if END_FIELDS[name] == i then
          run[n + 1] = name
          run[n + 2] = ARGV[i + 1]
          n = n + 2
        end
      end
    else
      local all = redis.call('HGETALL', KEYS[k])
      for j = 1, #all - 1, 2 do
        if END_FIELDS[all[j]] then
          run[n + 1] = all[j]
          run[n + 2] = all[j + 1]
          n = n + 2
        end
      end
    end
    local journal
    -- Numeric loops: ipairs is a function call an element.
    local size = 0
    if firstOnly then
      journal = {'#attempt', '1'}
      size = 9
    else
      -- Less the calls' claim parts (`#c<index>`, layout 2: claim-1.lua): the token, argument hash
      -- and sealed arguments no reader of a push reads (round 40 `journal-layout`). A journal
      -- without one (layout 1) is pushed as read, not copied: the loop is the one that sizes it.
      local all = redis.call('HGETALL', KEYS[k + 2])
      journal = all
      local n = 0
      for i = 1, #all - 1, 2 do
        local name = all[i]
        if string.byte(name, 1) == 35 and string.byte(name, 2) == 99 then
          if journal == all then
            journal = {}
            for j = 1, i - 1 do journal[j] = all[j] end
            n = i - 1
          end
        else
          size = size + #name + #all[i + 1]
          if journal ~= all then
            journal[n + 1] = name
            journal[n + 2] = all[i + 1]
            n = n + 2
          end
        end
      end
    end
    for i = 1, #run do size = size + #run[i] end
    if size <= ${END_PUSH_MAX_BYTES} then
      -- `end3` (format 2, a journal with calls, from END3_MIN_BYTES): where its build costs Redis
      -- less than cjson's escaping (test/bench/README.md round 43 `format-43`).
      local three = false
      if push == 3 and not firstOnly and size >= ${END3_MIN_BYTES} then
--- @include "end3"
        if end3Safe(journal) then
          three = true
          message = end3Message(ARGV[a] .. ' end3 [' .. cjson.encode(run) .. ',[', journal)
        end
      end
      if not three then message = ARGV[a] .. ' end2 ' .. cjson.encode({run, journal}) end
    end
  end
  redis.call('PUBLISH', ARGV[a + 1], message)
  return newStatus, at
end
