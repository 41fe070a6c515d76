-- beginAttempt(k, a): an execution's start: the record as read; unless it is missing, ended or
-- asked to cancel, the next attempt (the record's `attempts`; after the first, journal `#attempt`,
-- the journal left with no expiry: a live run's has none, lua/claim-1.lua), and
-- with KEYS[k+2] the record marked Running at nowMs and a status event carrying the attempt in a
-- plain `attempt` field (it is known only here; the sealed data cannot hold it), published unless
-- the record says no stream can be listening: `unwatched` (its create saw no tenant or session
-- stream's marker, includes/create-run.lua) and not `followed` (set by every stream that follows
-- the run's progress before it subscribes and reads, stream-listeners-store.ts). A stream that
-- marks the run after this start reads the event from the stream; one that marked it before hears it.
-- KEYS[k] journal, KEYS[k+1] run record, KEYS[k+2] (optional) the run's event stream (one slot:
--   `{runId}`).
-- ARGV[a] ttlSeconds (no longer read, round 46: its place kept, 6b60376a's gateways read a compact
--   hand-off registration by position; this release's registrations carry it empty, handoff-terms.ts), then with KEYS[k+2]: ARGV[a+1] maxLen, ARGV[a+2] eventType,
--   ARGV[a+3] sealedEventData, ARGV[a+4] channel, ARGV[a+5] message, ARGV[a+6] nowMs.
-- `known` (optional): {record key, its fields flattened} as the same script created it a moment
--   before (includes/create-run.lua's answer): read from there, when it is this record, instead of
--   by HGETALL (nothing between the create and this start writes the record).
--   Marked `deferred` (includes/create-run.lua), the record is not written yet: the start writes
--   it, its count, status and time in place, in one HSET (the answer's record as read before).
-- Returns {record, attempt | 0, journal}, hashes flattened (a first attempt's journal as it must be,
--   unread).
--- @include "event-add"
local function beginAttempt(k, a, known)
  local journal, record, events = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  local run
  if known and known[1] == record then run = known[2] else run = redis.call('HGETALL', record) end
  if #run == 0 then return {run, 0, {}} end
  -- status, cancelRequested and attempts from the fields just read (no command of their own)
  local st, cancel, attempts, unwatched, followed
  -- where the status, count and time are in a deferred record (written below with them in place)
  local deferred = run == (known and known.deferred and known[2])
  local stAt, countAt, timeAt
  for i = 1, #run, 2 do
    local f = run[i]
    if f == 'status' then st, stAt = run[i + 1], i + 1
    elseif f == 'cancelRequested' then cancel = run[i + 1]
    elseif f == 'attempts' then attempts, countAt = run[i + 1], i + 1
    elseif f == 'unwatched' then unwatched = run[i + 1]
    elseif f == 'followed' then followed = run[i + 1]
    elseif deferred and f == 'updatedAt' then timeAt = i + 1 end
  end
  if deferred and not (events and stAt and countAt and timeAt) then
    -- not a start this one writes in place: the record as created, then as ever
    known.deferred = nil
    redis.call('HSET', record, unpack(run))
    deferred = false
  end
  if st == 'Completed' or st == 'Failed' or st == 'Cancelled' then return {run, 0, {}} end
  if cancel == '1' then return {run, 0, {}} end
  -- A first start leaves the journal unwritten (a call's claim creates it): the
  -- record's count says no execution came before, and any later start numbers past that count
  -- (below), so an execution of this first attempt is fenced as if `#attempt` said 1.
  local before = tonumber(attempts) or 0
  local attempt = 1
  if before > 0 then
    attempt = redis.call('HINCRBY', journal, '#attempt', 1)
    -- The record counts every start; a journal may count fewer (it expired, or its first start
    -- left `#attempt` unwritten): the attempt goes past the record's count and the journal is
    -- raised to it, so an earlier execution's claims stay fenced.
    if attempt <= before then
      attempt = before + 1
      redis.call('HSET', journal, '#attempt', attempt)
    end
    -- The run lives (checked above): its journal must outlast any wait; an expiry a 9f886855
    -- process's claim or outcome set (one retention from its write) is taken off. Its end sets one.
    redis.call('PERSIST', journal)
  end
  if events then
    -- A first attempt's numbers as text (Redis prints a Lua number argument with libc's float
    -- printer: ~2 K instructions each; test/bench/README.md, round 35, `submit-lua`).
    local count, attemptText = before + 1, attempt == 1 and '1' or attempt
    if count == 1 then count = '1' end
    -- the record's count in the same HSET as its status (the script is atomic: as exact as HINCRBY);
    -- a status already Running (every create writes it so) is not written again: with effects
    -- replication each field reaches the AOF and the replicas.
    if deferred then
      -- the created record with this start applied, written once; the answer keeps it as read
      known.deferred = nil
      -- (kept in locals, not a table: one table fewer a handed submit)
      local wasSt, wasCount, wasTime = run[stAt], run[countAt], run[timeAt]
      run[stAt], run[countAt], run[timeAt] = 'Running', count, ARGV[a + 6]
      redis.call('HSET', record, unpack(run))
      run[stAt], run[countAt], run[timeAt] = wasSt, wasCount, wasTime
    elseif st == 'Running' then
      redis.call('HSET', record, 'attempts', count, 'updatedAt', ARGV[a + 6])
    else
      redis.call('HSET', record, 'attempts', count, 'status', 'Running', 'updatedAt', ARGV[a + 6])
    end
    -- A first attempt's stream holds its create's event and those of decisions before it.
    eventAdd(events, ARGV[a + 1], before == 0, 'type', ARGV[a + 2], 'data', ARGV[a + 3], 'attempt', attemptText)
    if unwatched ~= '1' or followed == '1' then redis.call('PUBLISH', ARGV[a + 4], ARGV[a + 5]) end
  else
    redis.call('HINCRBY', record, 'attempts', 1)
  end
  -- A first attempt's journal holds only the count just made: a call is journaled under an
  -- attempt this script counted, so none can precede the first (the journal is read for replays).
  if attempt == 1 then return {run, 1, {'#attempt', '1'}} end
  return {run, attempt, redis.call('HGETALL', journal)}
end
