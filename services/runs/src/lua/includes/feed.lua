-- feedAppend(feed, type, id, tenant, quiet, bare): appends `<type> <id>` to a tenant's feed (`feed`:
-- its key; approximate trim at ${FEED_MAX_LEN} entries, what a reconnecting events stream can
-- resume) and announces the tenant on ${TENANT_FEED_CHANNEL}, unless `quiet`: no events stream of the
-- tenant listened when the caller looked (includes/admit-tenant.lua), and those that start later
-- read the feed after they subscribe (run-index.ts `markFeedListened`).
-- `bare`: appended without the trim, which the next fold of the tenant's pending list makes instead
-- (includes/index-fold.lua). For a run's create and end, each of which appends an entry to that
-- list in the same script: a fold follows within FOLD_AT entries (run-index-scripts.ts) or at the next read of the
-- index. Redis writes an XADD given MAXLEN to the AOF and the replicas with its trim made exact
-- (`MAXLEN = <length>`, 28 bytes of each of the submit's and the end's fsync'd writes), where an
-- XTRIM that removes nothing is not written at all (test/bench/README.md, round 38, `aof-cut`).
local function feedAppend(feed, type, id, tenant, quiet, bare)
  if bare then
    redis.call('XADD', feed, '*', 'type', type, 'id', id)
  else
    redis.call('XADD', feed, 'MAXLEN', '~', '${FEED_MAX_LEN}', '*', 'type', type, 'id', id)
  end
  if not quiet then redis.call('PUBLISH', '${TENANT_FEED_CHANNEL}', tenant) end
end
