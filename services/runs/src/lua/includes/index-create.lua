-- indexCreate(k, a, owned): the index half of a run's create, in the tenant's slot. KEYS[k..k+5]: runs
-- (ZSET id → createdAt), summaries (HASH id → summary JSON), ended (ZSET id → endedAt), sessions
-- (ZSET session → last activity), session stats (HASH `<session>\n<field>`), the tenant's feed.
-- ARGV[a..a+7]: run id, createdAt, summary JSON, session, principal ('' = none), now ms,
-- retention ms, tenant. Also prunes up to ${PRUNE_PER_CREATE} runs whose records have expired.
-- `owned`: the admission found the session's owner key already naming this principal (see below).
--- @include "feed"
local function indexCreate(k, a, owned)
  local runs, summaries, ended = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  local sessions, stats, feed = KEYS[k + 3], KEYS[k + 4], KEYS[k + 5]
  local id, createdAt, summary, session = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local principal, now, retentionMs, tenant = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7]
  feedAppend(feed, 'run', id, tenant)
  redis.call('ZADD', runs, createdAt, id)
  redis.call('HSET', summaries, id, summary)
  if session ~= '' then
    redis.call('ZADD', sessions, 'GT', createdAt, session)
    -- A session's first entry writes its fields in one HSET (total, created and principal come and
    -- go together, see the prune below); a later one sets only a principal still missing: one a
    -- first entry without a principal left out (a create without admission). Not looked for when
    -- the admission found the owner key already naming this principal (`owned`): runs and skills
    -- all carry their principal, and an admission that claims the session looks, so a session
    -- held by its principal since has it.
    if redis.call('HINCRBY', stats, session .. '\ntotal', 1) == 1 then
      if principal ~= '' then
        redis.call('HSET', stats, session .. '\ncreated', createdAt, session .. '\nprincipal', principal)
      else
        redis.call('HSET', stats, session .. '\ncreated', createdAt)
      end
    elseif principal ~= '' and not owned then
      redis.call('HSETNX', stats, session .. '\nprincipal', principal)
    end
  end
  local gone = redis.call('ZRANGEBYSCORE', ended, '-inf', tonumber(now) - tonumber(retentionMs), 'LIMIT', 0, ${PRUNE_PER_CREATE})
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
