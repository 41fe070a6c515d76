-- foldIndex(pending, summaries, ended, sessions, stats): applies the creates and ends waiting in a
-- tenant's pending list (includes/index-create.lua and includes/finish-tenant.lua append one JSON
-- entry each) to its index, the days' usage and the hours' health, in their order, and removes
-- them from the list, in one step: an entry is applied exactly once (the script is atomic; what it
-- applied leaves the list with the writes it made). Each key is written once per fold, however many runs it carries: one
-- ZADD of the runs, one HSET of the summaries, one ZADD of the ended set and of the sessions, one
-- HMGET + HSET of the session counters, per usage day and per health hour one HMGET + HSET (+ its
-- expiry when new). The runs key is the pending key's sibling (`…:index:runs`, keys.ts); every key
-- is in the tenant's slot, and the usage and health keys an entry names are not declared by its
-- caller, nor is the feed this fold trims (includes/feed.lua).
-- A create entry: t 'c', i run id, a createdAt, m summary JSON, s session ('' = none), p principal
--   ('' = none), o 1 when the admission found the session's owner already naming the principal,
--   n now ms, r retention ms. Format 2 (includes/index-create.lua): `m` an object of the summary's
--   fields but the id, session, principal and creation time (put back from `i`, `s`, `p`, `a`), and
--   no `n` when it equalled `a`. It prunes up to ${PRUNE_PER_CREATE} runs ended more than the retention
--   ago (their records expired) from every index key, as each create did.
-- An end entry: i run id, s final status, e ended ms, k failure kind ('' = keep the summary's; absent
--   on a Completed end = `none`, which a later release may leave out),
--   o output bytes, b binding calls, c sandbox CPU ms, u usage day key, x when it expires (unix s),
--   h health hour key (format 2, includes/finish-tenant.lua: no `u`, `x`, `h`, derived here from `e`
--   as run-index-writes.ts `finishTenantCall` names them). Counted once per run: a run whose summary is missing or already final counts
--   nothing (a second end's entry, or the end of a run pruned meanwhile).
-- At most ${FOLD_MAX} entries a call (the oldest; the rest stay for the next fold), so no command
-- gets more arguments than Lua can unpack however long the list grew.
-- Returns how many entries it took.
--- @include "run-final"
-- The UTC day (`YYYY-MM-DD`) of a time in ms, as run-index-writes.ts `usageDay` (days to a civil
-- date: H. Hinnant's `civil_from_days`, for days ≥ 0).
local function utcDay(ms)
  local z = math.floor(ms / 86400000) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return string.format('%04d-%02d-%02d', y, m, d)
end
-- A create entry's summary: format 1's JSON text (also returned, written as it is), or format 2's
-- object completed from the entry's own fields (written encoded).
local function createdSummary(e)
  local m = e.m
  if type(m) ~= 'table' then return cjson.decode(m), m end
  m.id = e.i
  m.sessionId = e.s
  if m.principal == nil and e.p ~= '' then m.principal = e.p end
  if m.createdAt == nil then m.createdAt = tonumber(e.a) end
  return m, nil
end
local function foldIndex(pending, summaries, ended, sessions, stats)
  local rows = redis.call('LRANGE', pending, 0, ${FOLD_MAX} - 1)
  if #rows == 0 then return 0 end
  local runs = string.sub(pending, 1, #pending - #'pending') .. 'runs'
  -- The tenant's feed (`…:feed`, keys.ts, the same slot): a run's create and end append to it
  -- untrimmed, each with its entry in this list (includes/feed.lua), so the trim is made here, once
  -- a fold. Written to the AOF only when it removes entries (a node of ~100 at the cap).
  local prefix = string.sub(pending, 1, #pending - #'index:pending')
  local feed = prefix .. 'feed'
  redis.call('XTRIM', feed, 'MAXLEN', '~', '${FEED_MAX_LEN}')
  local entries, creates, created, createdIn = {}, 0, {}, {}
  local now, retention
  for _, raw in ipairs(rows) do
    local ok, e = pcall(cjson.decode, raw)
    if ok and type(e) == 'table' and type(e.i) == 'string' then
      entries[#entries + 1] = e
      if e.t == 'c' then
        creates = creates + 1
        created[e.i] = true
        createdIn[e.i] = e.s
        now, retention = tonumber(e.n or e.a), tonumber(e.r)
      end
    end
  end
  -- The prune first, on what earlier folds wrote (this fold's ends are not in `ended` yet).
  if creates > 0 and now and retention then
    local gone = redis.call('ZRANGEBYSCORE', ended, '-inf', now - retention, 'LIMIT', 0, creates * ${PRUNE_PER_CREATE})
    for _, old in ipairs(gone) do
      local raw = redis.call('HGET', summaries, old)
      local s = raw and cjson.decode(raw)
      if s and s.sessionId ~= '' then
        local left = redis.call('HINCRBY', stats, s.sessionId .. '\ntotal', -1)
        redis.call('HINCRBY', stats, s.sessionId .. '\n' .. s.status, -1)
        if left <= 0 then
          redis.call('HDEL', stats, s.sessionId .. '\ntotal', s.sessionId .. '\nCompleted',
            s.sessionId .. '\nFailed', s.sessionId .. '\nCancelled', s.sessionId .. '\nprincipal',
            s.sessionId .. '\ncreated')
          redis.call('ZREM', sessions, s.sessionId)
        end
      end
      redis.call('ZREM', runs, old)
      redis.call('ZREM', ended, old)
      redis.call('HDEL', summaries, old)
    end
  end
  -- Summaries of the runs this fold ends but did not create, and the session fields it changes.
  local sums, raws, need, seen = {}, {}, {}, {}
  local statNames, statAt = {}, {}
  local function statField(name)
    if not statAt[name] then
      statNames[#statNames + 1] = name
      statAt[name] = #statNames
    end
  end
  for _, e in ipairs(entries) do
    if e.t == 'c' then
      if e.s ~= '' then
        statField(e.s .. '\ntotal')
        statField(e.s .. '\nprincipal')
      end
    elseif not created[e.i] and not seen[e.i] then
      seen[e.i] = true
      need[#need + 1] = e.i
    end
  end
  if #need > 0 then
    local found = redis.call('HMGET', summaries, unpack(need))
    for j, id in ipairs(need) do
      if found[j] then sums[id] = cjson.decode(found[j]) end
    end
  end
  local function statsOf(session, status)
    statField(session .. '\n' .. status)
  end
  for _, e in ipairs(entries) do
    if e.t ~= 'c' and isFinal(e.s) then
      local s = sums[e.i]
      if s == nil and created[e.i] then
        -- created in this fold too: its session is the create entry's
        if createdIn[e.i] ~= '' then statsOf(createdIn[e.i], e.s) end
      elseif s and s.sessionId ~= '' then
        statsOf(s.sessionId, e.s)
      end
    end
  end
  local stat = {}
  if #statNames > 0 then
    local had = redis.call('HMGET', stats, unpack(statNames))
    for j, name in ipairs(statNames) do stat[name] = had[j] or false end
  end
  local statChanged, statOrder = {}, {}
  local function setStat(name, value)
    stat[name] = value
    if not statChanged[name] then
      statChanged[name] = true
      statOrder[#statOrder + 1] = name
    end
  end
  -- What the fold adds to usage and health: counters per key (names in first-seen order).
  local adds, order, expireAt, health = {}, {}, {}, {}
  local function add(key, name, n)
    local a = adds[key]
    if not a then
      a = {}
      adds[key] = a
      order[#order + 1] = key
    end
    if not a[name] then
      a[name] = 0
      a[#a + 1] = name
    end
    a[name] = a[name] + n
  end
  local written, writtenAt, runArgs, endedArgs, lastActivity = {}, {}, {}, {}, {}
  local dayOf, hourOf = {}, {}
  local function touch(session, at)
    local last = lastActivity[session]
    if not last or at > last then lastActivity[session] = at end
  end
  local function write(id)
    if not writtenAt[id] then
      written[#written + 1] = id
      writtenAt[id] = true
    end
  end
  for _, e in ipairs(entries) do
    if e.t == 'c' then
      local createdAt = tonumber(e.a) or 0
      sums[e.i], raws[e.i] = createdSummary(e)
      write(e.i)
      runArgs[#runArgs + 1] = e.a
      runArgs[#runArgs + 1] = e.i
      if e.s ~= '' then
        touch(e.s, createdAt)
        -- A session's first entry writes its fields together (total, created and principal come
        -- and go together, see the prune); a later one sets only a principal still missing (one a
        -- first entry without a principal left out), not looked for when the admission found the
        -- owner key already naming this principal (`o`).
        local total = (tonumber(stat[e.s .. '\ntotal']) or 0) + 1
        setStat(e.s .. '\ntotal', total)
        if total == 1 then
          setStat(e.s .. '\ncreated', e.a)
          if e.p ~= '' then setStat(e.s .. '\nprincipal', e.p) end
        elseif e.p ~= '' and e.o ~= 1 and not stat[e.s .. '\nprincipal'] then
          setStat(e.s .. '\nprincipal', e.p)
        end
      end
    else
      local s = sums[e.i]
      local status = e.s
      if s and not isFinal(s.status) and isFinal(status) then
        local endedAt = tonumber(e.e) or 0
        s.status = status
        s.endedAt = endedAt
        -- A Completed end without `k` is `none` (a later release may leave `"k":"none"` out; the
        -- summary of a create carries no kind). Otherwise '' or absent keeps the summary's.
        if e.k ~= nil and e.k ~= '' then s.kind = e.k
        elseif status == 'Completed' and (s.kind == nil or s.kind == '') then s.kind = 'none' end
        raws[e.i] = nil
        write(e.i)
        endedArgs[#endedArgs + 1] = endedAt
        endedArgs[#endedArgs + 1] = e.i
        if s.sessionId ~= '' then
          touch(s.sessionId, endedAt)
          local name = s.sessionId .. '\n' .. status
          setStat(name, (tonumber(stat[name]) or 0) + 1)
        end
        local wall = math.max(0, endedAt - (tonumber(s.createdAt) or endedAt))
        if e.u == nil and e.h == nil then
          -- Format 2's end entry: its usage day, the day's expiry and its health hour from its end
          -- time (run-index-writes.ts `finishTenantCall`, health-buckets.ts `healthHour`).
          -- Named once a day and once an hour per fold (a fold's ends share them).
          local day, hour = math.floor(endedAt / 86400000), math.floor(endedAt / 3600000)
          local d = dayOf[day]
          if not d then
            d = {prefix .. 'usage:' .. utcDay(endedAt), string.format('%.0f', (day + 1) * 86400 + ${USAGE_RETENTION_SECONDS})}
            dayOf[day] = d
          end
          local h = hourOf[hour]
          if not h then
            h = prefix .. 'health:' .. string.format('%.0f', hour)
            hourOf[hour] = h
          end
          e.u, e.x, e.h = d[1], d[2], h
        end
        if type(e.u) == 'string' then
          add(e.u, 'runs:' .. status, 1)
          add(e.u, 'wallMs', wall)
          add(e.u, 'outputBytes', tonumber(e.o) or 0)
          add(e.u, 'bindingCalls', tonumber(e.b) or 0)
          add(e.u, 'cpuMs', tonumber(e.c) or 0)
          if s.style == 'skill' then add(e.u, 'skillRuns', 1) end
          expireAt[e.u] = e.x
        end
        if type(e.h) == 'string' then
          -- One counter per status and latency bin (health-buckets.ts: `e:`, read as both `n:` and `d:`).
          local bucket = math.floor(endedAt / ${HEALTH_BUCKET_MS}) .. '|'
          local bin = math.floor(${LATENCY_BINS_PER_DOUBLING} * math.log(math.max(1, wall)) / math.log(2))
          add(e.h, bucket .. 'e:' .. status .. ':' .. bin, 1)
          local kind = e.k or ''
          if status == 'Failed' and kind ~= '' and kind ~= 'none' then add(e.h, bucket .. 'k:' .. kind, 1) end
          health[e.h] = true
        end
      end
    end
  end
  if #runArgs > 0 then redis.call('ZADD', runs, unpack(runArgs)) end
  if #written > 0 then
    local args = {}
    for _, id in ipairs(written) do
      args[#args + 1] = id
      -- a summary only created here is written as the create gave it
      args[#args + 1] = raws[id] or cjson.encode(sums[id])
    end
    redis.call('HSET', summaries, unpack(args))
  end
  if #endedArgs > 0 then redis.call('ZADD', ended, unpack(endedArgs)) end
  local touched = {}
  for session, at in pairs(lastActivity) do
    touched[#touched + 1] = string.format('%.0f', at)
    touched[#touched + 1] = session
  end
  if #touched > 0 then redis.call('ZADD', sessions, 'GT', unpack(touched)) end
  if #statOrder > 0 then
    local args = {}
    for _, name in ipairs(statOrder) do
      args[#args + 1] = name
      args[#args + 1] = tostring(stat[name])
    end
    redis.call('HSET', stats, unpack(args))
  end
  -- Counters read and written whole (the script is atomic: as exact as an HINCRBY each). A usage
  -- day new to this fold (no wallMs: written by every end) gets its fixed expiry; a health hour
  -- given a new counter has its expiry renewed (once per fold: it lapses no earlier than when each
  -- new bucket, status and bin renewed it).
  for _, key in ipairs(order) do
    local a = adds[key]
    local had = redis.call('HMGET', key, unpack(a))
    local set = {}
    local fresh, newDay = false, false
    for j, name in ipairs(a) do
      if not had[j] then
        fresh = true
        if name == 'wallMs' then newDay = true end
      end
      set[#set + 1] = name
      set[#set + 1] = string.format('%.0f', (tonumber(had[j]) or 0) + a[name])
    end
    redis.call('HSET', key, unpack(set))
    if expireAt[key] then
      if newDay then redis.call('EXPIREAT', key, expireAt[key]) end
    elseif health[key] and fresh then
      redis.call('EXPIRE', key, ${HEALTH_TTL_SECONDS})
    end
  end
  redis.call('LTRIM', pending, #rows, -1)
  return #rows
end
