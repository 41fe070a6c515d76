/**
 * A session's owner and its "allow for the session" grants: both in the session's tenant slot.
 *
 * A session belongs to the principal that opened it: its first run (run-store's admission claims
 * it in the same script), its first file or its first skill (`claim`, here). Every route that takes
 * a session or a run id checks the caller against that owner (the gateway's ownership check).
 *
 * Grants live in ONE hash per session, field `<connectionId>\n<tool>`: a session id can no longer be
 * spelled so that its grant key is another session's (the old per-grant key joined the parts with
 * `:`, which a session id could contain).
 */
import type { Redis } from 'ioredis';
import { keys } from './keys.ts';
import { LuaScript } from './lua-script.ts';

/**
 * Lua for how long a refresh of a session's owner stands, seconds, from its time to live `ttl` (a
 * Lua expression): a run's admission (@islet/runs includes/admit-tenant.lua) refreshes the owner to
 * `ttl` plus this and marks it fresh (`<owner>:fresh`) for as long; creates that find the mark
 * write nothing of the owner. Below 1: every create refreshes it, to `ttl`.
 */
export const ownerFreshLua = (ttl: string) => `math.min(3600, math.floor(tonumber(${ttl}) / 64))`;

// KEYS[1] the owner key. ARGV: principal, ttl seconds. Returns the owner after the claim. The
// owner's own refresh goes as far as an admission's does (past `ttl` by its fresh seconds): while
// an admission's fresh mark stands, the owner never has less to live than that admission left it.
const CLAIM = new LuaScript(`
local owner = redis.call('GET', KEYS[1])
if not owner then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return ARGV[1]
end
if owner == ARGV[1] then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]) + math.max(0, ${ownerFreshLua('ARGV[2]')})) end
return owner
`);

const grantField = (connectionId: string, tool: string) => `${connectionId}\n${tool}`;

export function createSessionStore(redis: Redis) {
  return {
    /** Claims a free session for `principal`; answers the owner (the caller's principal, or another's). */
    async claim(tenant: string, session: string, principal: string, ttlSeconds: number): Promise<string> {
      return String(await CLAIM.run(redis, [keys.sessionOwner(tenant, session)], [principal, ttlSeconds]));
    },
    /** The session's owner, or null when nobody opened it (or it expired with its runs). */
    owner(tenant: string, session: string): Promise<string | null> {
      return redis.get(keys.sessionOwner(tenant, session));
    },
    /** Records that `keyId` allowed the tool for every later call of the session. */
    async grant(
      tenant: string,
      session: string,
      connectionId: string,
      tool: string,
      keyId: string,
      ttlSeconds: number,
    ): Promise<void> {
      const key = keys.sessionGrants(tenant, session);
      await redis.multi().hset(key, grantField(connectionId, tool), keyId).expire(key, ttlSeconds).exec();
    },
    async granted(tenant: string, session: string, connectionId: string, tool: string): Promise<boolean> {
      return (await redis.hexists(keys.sessionGrants(tenant, session), grantField(connectionId, tool))) === 1;
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
