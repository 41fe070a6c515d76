-- foldIndex(pending, summaries, ended, sessions, stats): applies the run ends waiting in a tenant's
-- pending list (includes/finish-tenant.lua appends one JSON entry per end) to its index, the days'
-- usage and the hours' health, and empties the list, in one step: an entry is applied exactly once
-- (the script is atomic; the list is deleted after the writes it made). Each key is written once
-- per fold, however many ends it carries: one HMGET of the summaries, one HSET of them, one ZADD of
-- the ended set and of the sessions, one HMGET + HSET of the session counters, and per usage day and
-- per health hour one HMGET + HSET (+ its expiry when new). Every key is in the tenant's slot; the
-- usage and health keys an entry names are not declared by its caller.
-- An entry: i run id, s final status, e ended ms, k failure kind ('' = keep the summary's),
-- o output bytes, b binding calls, c sandbox CPU ms, u usage day key, x when it expires (unix s),
-- h health hour key. Counted once per run: a run whose summary is missing or already final counts
-- nothing (a second end's entry, or an end of a run pruned meanwhile).
-- Returns how many entries it took.
--- @include "run-final"
local function foldIndex(pending, summaries, ended, sessions, stats)
  local rows = redis.call('LRANGE', pending, 0, -1)
  if #rows == 0 then return 0 end
  local entries, ids, seen = {}, {}, {}
  for _, raw in ipairs(rows) do
    local ok, e = pcall(cjson.decode, raw)
    if ok and type(e) == 'table' and type(e.i) == 'string' then
      entries[#entries + 1] = e
      if not seen[e.i] then
        seen[e.i] = true
        ids[#ids + 1] = e.i
      end
    end
  end
  local sums = {}
  if #ids > 0 then
    local raws = redis.call('HMGET', summaries, unpack(ids))
    for j, id in ipairs(ids) do
      if raws[j] then sums[id] = cjson.decode(raws[j]) end
    end
  end
  -- What the fold adds: counters per key (names in first-seen order), then written whole.
  local adds, order, expireAt = {}, {}, {}
  local function add(key, name, n)
    local a = adds[key]
    if not a then
      a = {}
      adds[key] = a
      order[#order + 1] = key
      expireAt[key] = false
    end
    if not a[name] then
      a[name] = 0
      a[#a + 1] = name
    end
    a[name] = a[name] + n
  end
  local setSummaries, endedArgs, lastActivity = {}, {}, {}
  local health = {}
  for _, e in ipairs(entries) do
    local s = sums[e.i]
    local status = e.s
    if s and not isFinal(s.status) and isFinal(status) then
      local endedAt = tonumber(e.e) or 0
      s.status = status
      s.endedAt = endedAt
      if e.k ~= nil and e.k ~= '' then s.kind = e.k end
      setSummaries[#setSummaries + 1] = e.i
      endedArgs[#endedArgs + 1] = endedAt
      endedArgs[#endedArgs + 1] = e.i
      if s.sessionId ~= '' then
        local last = lastActivity[s.sessionId]
        if not last or endedAt > last then lastActivity[s.sessionId] = endedAt end
        add(stats, s.sessionId .. '\n' .. status, 1)
      end
      local wall = math.max(0, endedAt - (tonumber(s.createdAt) or endedAt))
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
        local latency = math.max(1, wall)
        local bin = math.floor(${LATENCY_BINS_PER_DOUBLING} * math.log(latency) / math.log(2))
        add(e.h, bucket .. 'e:' .. status .. ':' .. bin, 1)
        local kind = e.k or ''
        if status == 'Failed' and kind ~= '' and kind ~= 'none' then add(e.h, bucket .. 'k:' .. kind, 1) end
        health[e.h] = true
      end
    end
  end
  if #setSummaries > 0 then
    local args = {}
    for _, id in ipairs(setSummaries) do
      args[#args + 1] = id
      args[#args + 1] = cjson.encode(sums[id])
    end
    redis.call('HSET', summaries, unpack(args))
    redis.call('ZADD', ended, unpack(endedArgs))
    local touched = {}
    for session, at in pairs(lastActivity) do
      touched[#touched + 1] = at
      touched[#touched + 1] = session
    end
    if #touched > 0 then redis.call('ZADD', sessions, 'GT', unpack(touched)) end
  end
  -- Counters read and written whole (the script is atomic: as exact as an HINCRBY each). A usage
  -- day new to this fold (no wallMs: written by every end) gets its fixed expiry; a health hour
  -- whose fold made a new counter has its expiry renewed (at most once per fold: it lapses no
  -- earlier than when each new bucket, status and bin renewed it).
  for _, key in ipairs(order) do
    local a = adds[key]
    local had = redis.call('HMGET', key, unpack(a))
    local set = {}
    local fresh = false
    for j, name in ipairs(a) do
      if not had[j] then fresh = true end
      set[#set + 1] = name
      set[#set + 1] = string.format('%.0f', (tonumber(had[j]) or 0) + a[name])
    end
    redis.call('HSET', key, unpack(set))
    if expireAt[key] then
      local wallAt
      for j, name in ipairs(a) do if name == 'wallMs' then wallAt = j end end
      if not had[wallAt] then redis.call('EXPIREAT', key, expireAt[key]) end
    elseif health[key] and fresh then
      redis.call('EXPIRE', key, ${HEALTH_TTL_SECONDS})
    end
  end
  redis.call('DEL', pending)
  return #rows
end
