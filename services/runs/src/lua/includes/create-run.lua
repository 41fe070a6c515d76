-- createRun(k, a, heard): the run half of a create, its keys from KEYS[k] and its arguments from
-- ARGV[a] on. KEYS: run, events. ARGV: channel, message, maxlen, sealedStatusEvent, field, value, ...
-- `heard` (includes/admit-tenant.lua: [1] the feed's marker, [2] the session's; nil = not looked:
-- publish as ever): without a session listener the message is not published; without a feed
-- listener the record keeps `quiet` '1', which lets the run's end leave its feed entry unannounced
-- (includes/finish-run.lua): a tenant stream that starts later follows the runs then in flight by
-- their own channel (tenant-events.ts). With neither listener the record keeps `unwatched` '1' too:
-- its attempts' starts publish no progress unless a stream marks it `followed` first
-- (includes/begin-attempt.lua, stream-listeners-store.ts `followRuns`).
-- Returns {record key, its fields flattened} when every field written was new (the record is then
-- exactly what HGETALL would read, in another order: a run's start later in the same script reads
-- it from here, includes/begin-attempt.lua), else nil.
--- @include "event-add"
-- `defer`: the caller writes the record (a submit's script whose hand-off may start this very run:
-- its start writes it once, with its attempt, where it was two HSETs, 125 bytes more in the fsync'd
-- write, test/bench/README.md round 36 `aof-trim`; or the script's end, admitted-add.ts): it is not
-- written here, and taken as new without a look (a submit's run id is a new UUID, gateway
-- runs-service.ts: no record of it can be there), its answer marked `deferred`.
local function createRun(k, a, heard, defer)
  -- Copied by unpack (C, the table made at its size): appended one by one, the table grew and was
  -- rehashed ~6 times over its ~34 fields (test/bench/README.md, round 35, `submit-lua`). A submit
  -- whose script holds the fields' names in its text (admitted-add.ts `RECORD_FIELDS`) is sent
  -- their values alone and makes the table by one constructor of names and values instead.
  local fields = {unpack(ARGV, a + 4, #ARGV)}
  if heard and not heard[1] then
    fields[#fields + 1] = 'quiet'
    fields[#fields + 1] = '1'
    if not heard[2] then
      fields[#fields + 1] = 'unwatched'
      fields[#fields + 1] = '1'
    end
  end
  -- A new record: a new run, whose stream holds nothing yet (they expire together).
  local new = defer or redis.call('HSET', KEYS[k], unpack(fields)) * 2 == #fields
  eventAdd(KEYS[k + 1], ARGV[a + 2], new, 'type', 'status', 'data', ARGV[a + 3])
  if not heard or heard[2] then redis.call('PUBLISH', ARGV[a], ARGV[a + 1]) end
  if new then return {KEYS[k], fields, deferred = defer} end
end
