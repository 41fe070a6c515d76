/**
 * The run store's Lua scripts: each touches one hash slot (a run's `{runId}` keys or a tenant's
 * `{t:<tenant>}` keys, see keys.ts), so each is one atomic step on a Redis Cluster too.
 */
import { countInWindowLua, LuaScript } from '@islet/core/lua-script';
import { indexCreateLua } from './run-index-scripts.ts';

/**
 * What the in-flight quota counts, as a Lua expression: runs not ended (the in-flight set) plus
 * skills whose reservation is live at `now` (one definition for the count and the admission).
 */
const inFlight = (inflight: string, skills: string, now: string) =>
  `redis.call('ZCARD', ${inflight}) + redis.call('ZCOUNT', ${skills}, '(' .. ${now}, '+inf')`;

const FINAL_GUARD = `
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return -1 end
if st == 'Completed' or st == 'Failed' or st == 'Cancelled' then return 0 end
`;

/**
 * The most an end message carries of a run's record and journal (their fields' lengths summed),
 * bytes. Every gateway replica receives every end message, and on a Redis Cluster every node
 * relays it: a larger run's end goes out as its bare id and its waiter reads the run instead.
 */
export const END_PUSH_MAX_BYTES = 32 * 1024;

// KEYS: run, events, and optionally the run's journal (its waiter gets the end pushed). ARGV:
// message (the run id, then optionally a space and a tag), channel, eventType, sealedEventData,
// maxlen, ttlSeconds, field, value, ...
// A final status with KEYS[3] publishes `<id> end [record, journal]` (both hashes flattened, as
// cjson encodes them: an empty one is `{}`) when they fit END_PUSH_MAX_BYTES, so the gateway
// holding the submit answers it without reading them back.
// Returns 1 (written), 0 (already final: nothing written), -1 (no record).
export const TRANSITION = new LuaScript(`${FINAL_GUARD}
local fields = {}
local newStatus = st
for i = 7, #ARGV do
  fields[#fields + 1] = ARGV[i]
  -- the status this write leaves (the last one given wins, as in HSET), without reading it back
  if (i - 7) % 2 == 0 and ARGV[i] == 'status' and ARGV[i + 1] then newStatus = ARGV[i + 1] end
end
redis.call('HSET', KEYS[1], unpack(fields))
local ended = newStatus == 'Completed' or newStatus == 'Failed' or newStatus == 'Cancelled'
if ended then
  redis.call('EXPIRE', KEYS[1], ARGV[6])
  redis.call('EXPIRE', KEYS[2], ARGV[6])
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'type', ARGV[3], 'data', ARGV[4])
local message = ARGV[1]
if ended and KEYS[3] then
  local run = redis.call('HGETALL', KEYS[1])
  local journal = redis.call('HGETALL', KEYS[3])
  local size = 0
  for _, v in ipairs(run) do size = size + #v end
  for _, v in ipairs(journal) do size = size + #v end
  if size <= ${END_PUSH_MAX_BYTES} then message = ARGV[1] .. ' end ' .. cjson.encode({run, journal}) end
end
redis.call('PUBLISH', ARGV[2], message)
return 1
`);

/** The index keys (KEYS[k]…) and arguments (ARGV[a]…) of a create's tenant half (run-index-scripts.ts). */
const indexAt = (k: number, a: number) =>
  indexCreateLua(
    [0, 1, 2, 3, 4, 5].map((i) => `KEYS[${k + i}]`),
    [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `ARGV[${a + i}]`),
  );

// The tenant half of a create. KEYS: inflight, session runs, the five index keys and the feed.
// ARGV: runId, createdAt, the eight index arguments (run-index.ts indexCreateArgs).
export const CREATE_TENANT = new LuaScript(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
${indexAt(3, 3)}
return 1
`);

// The tenant half of a create, with the tenant's admission checked in the same step (a flood of
// parallel submits cannot pass the quota between a count and an add). KEYS: inflight, session
// runs, skills, session owner, idempotency key, the tenant's rate-limit window, the five index
// keys and the feed. ARGV: runId, createdAt, maxInFlight, principal, sessionTtlSeconds, nowMs,
// checkIdempotency ('1'|'0'), rateLimit ('' = the request was counted already), the eight index
// arguments. With a rate limit the request is counted
// first, in the counter the gateway's own counts use (countInWindowLua), and refused past the
// limit before anything else. With the check, the
// Idempotency-Key must still name this run (a retry may have taken it over from a request presumed
// dead: IDEM_TAKE_OVER). The session goes to its first principal (refreshed for it); the quota
// counts runs not ended plus skills whose reservation is live. Returns 'created', 'rate-limited',
// 'superseded', 'session-taken' or 'over-quota'.
const ADMIT_TENANT_LUA = `
if ARGV[8] ~= '' then${countInWindowLua('KEYS[6]', 'counted')}  if counted > tonumber(ARGV[8]) then return 'rate-limited' end
end
if ARGV[7] == '1' then
  local held = redis.call('GET', KEYS[5])
  if not held or cjson.decode(held).runId ~= ARGV[1] then return 'superseded' end
end
local owner = redis.call('GET', KEYS[4])
if not owner then
  redis.call('SET', KEYS[4], ARGV[4], 'EX', ARGV[5])
elseif owner ~= ARGV[4] then
  return 'session-taken'
else
  redis.call('EXPIRE', KEYS[4], ARGV[5])
end
local n = ${inFlight('KEYS[1]', 'KEYS[3]', 'ARGV[6]')}
if n >= tonumber(ARGV[3]) then return 'over-quota' end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
${indexAt(7, 9)}`;
export const ADMIT_TENANT = new LuaScript(`${ADMIT_TENANT_LUA}return 'created'`);

// The run half of a create. KEYS: run, events. ARGV: channel, message, maxlen, sealedStatusEvent,
// field, value, ... (`k`, `a`: where its keys and arguments start, for ADMIT_AND_CREATE.)
const createRunLua = (k: number, a: number) => `
local fields = {}
for i = ${a + 4}, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[${k}], unpack(fields))
redis.call('XADD', KEYS[${k + 1}], 'MAXLEN', '~', ARGV[${a + 2}], '*', 'type', 'status', 'data', ARGV[${a + 3}])
redis.call('PUBLISH', ARGV[${a}], ARGV[${a + 1}])
`;
export const CREATE_RUN = new LuaScript(`${createRunLua(1, 1)}return 1`);

// Both halves of an admitted create in one step, for one server only (its keys span two slots, so
// never on a Cluster): KEYS and ARGV are ADMIT_TENANT's (12 and 16), then CREATE_RUN's. A refused
// admission writes nothing of the run (a rate-limited one only its count). Returns what
// ADMIT_TENANT returns.
export const ADMIT_AND_CREATE = new LuaScript(`${ADMIT_TENANT_LUA}${createRunLua(13, 17)}return 'created'`);

// KEYS: idempotency key. ARGV: the value a failed request set. Drops the key only while it is still
// that request's (a retry may have taken it over meanwhile).
export const IDEM_RELEASE = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

// A retry takes an Idempotency-Key over from a first request that stored no run (it died between
// claiming the key and its admission): only while the key still holds what the retry read, and
// only if that run was never admitted (an in-flight entry means its record is on its way; an
// admitted run that died unwritten loses its entry to the orphan sweep, and then this succeeds).
// The first request, if it still lives, is refused at its admission ('superseded'). KEYS:
// idempotency key, inflight. ARGV: value read, new value, ttlSeconds, the first request's run id.
export const IDEM_TAKE_OVER = new LuaScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('ZSCORE', KEYS[2], ARGV[4]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
`);

// KEYS: inflight, skills. ARGV: now ms. Runs not ended plus skills whose reservation is live.
export const IN_FLIGHT_COUNT = new LuaScript(`
return ${inFlight('KEYS[1]', 'KEYS[2]', 'ARGV[1]')}
`);

// KEYS: tenant skills, inflight. ARGV: skill id, now ms, ttl ms, limit, key ttl ms.
export const RESERVE_SKILL = new LuaScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`);

/** Events kept per run stream by default (approximate MAXLEN); a gateway's fused call-event write uses it too. */
