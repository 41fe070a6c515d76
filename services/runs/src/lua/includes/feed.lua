-- feedAppend(feed, type, id, tenant, quiet): appends `<type> <id>` to a tenant's feed (`feed`: its
-- key; approximate trim at ${FEED_MAX_LEN} entries, what a reconnecting events stream can resume)
-- and announces the tenant on ${TENANT_FEED_CHANNEL}, unless `quiet`: no events stream of the
-- tenant listened when the caller looked (includes/admit-tenant.lua), and those that start later
-- read the feed after they subscribe (run-index.ts `markFeedListened`).
local function feedAppend(feed, type, id, tenant, quiet)
  redis.call('XADD', feed, 'MAXLEN', '~', '${FEED_MAX_LEN}', '*', 'type', type, 'id', id)
  if not quiet then redis.call('PUBLISH', '${TENANT_FEED_CHANNEL}', tenant) end
end
