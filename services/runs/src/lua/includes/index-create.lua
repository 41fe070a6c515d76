-- indexCreate(k, a, owned): the index half of a run's create, in the tenant's slot: appended to the
-- tenant's pending list, which includes/index-fold.lua applies to the index (the run's entry and
-- summary, its session's activity and counters, and the prune of runs whose records expired) here
-- when the list reaches ${FOLD_AT} entries, else whenever a reader of the index folds it first
-- (run-index.ts). The feed hears the create at once.
-- KEYS[k..k+5]: pending list, summaries (HASH id → summary JSON), ended (ZSET id → endedAt),
-- sessions (ZSET session → last activity), session stats (HASH `<session>\n<field>`), the tenant's
-- feed.
-- ARGV[a..a+7]: run id, createdAt, summary JSON, session, principal ('' = none), now ms,
-- retention ms, tenant.
-- `owned`: the admission found the session's owner key already naming this principal (the fold
-- then does not look for a missing principal: runs and skills all carry theirs, and an admission
-- that claims the session looks, so a session held by its principal since has it).
--- @include "feed"
--- @include "index-fold"
local function indexCreate(k, a, owned)
  local entry = cjson.encode({
    t = 'c', i = ARGV[a], a = ARGV[a + 1], m = ARGV[a + 2], s = ARGV[a + 3], p = ARGV[a + 4],
    o = owned and 1 or 0, n = ARGV[a + 5], r = ARGV[a + 6],
  })
  feedAppend(KEYS[k + 5], 'run', ARGV[a], ARGV[a + 7])
  if redis.call('RPUSH', KEYS[k], entry) >= ${FOLD_AT} then
    foldIndex(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4])
  end
end
