-- feedAppend(feed, type, id, tenant): appends `<type> <id>` to a tenant's feed (`feed`: its key;
-- approximate trim at ${FEED_MAX_LEN} entries, what a reconnecting events stream can resume) and
-- announces the tenant on ${TENANT_FEED_CHANNEL}.
local function feedAppend(feed, type, id, tenant)
  redis.call('XADD', feed, 'MAXLEN', '~', ${FEED_MAX_LEN}, '*', 'type', type, 'id', id)
  redis.call('PUBLISH', '${TENANT_FEED_CHANNEL}', tenant)
end
