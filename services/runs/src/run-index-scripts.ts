/**
 * The run index's Lua (run-index.ts): what a create and an end write into the tenant's index, and
 * the list scripts. Every key is in the tenant's `{t:<tenant>}` slot (keys.ts), except the run
 * record an end reads on one server (where no slot is checked).
 *
 * The index keys, as Lua expressions, in this order: runs (ZSET id → createdAt), summaries (HASH
 * id → summary JSON), ended (ZSET id → endedAt), sessions (ZSET session → last activity), session
 * stats (HASH `<session>\n<field>` → value: total, a count per final status, principal, created).
 */
import { channels } from '@islet/core';
import { LuaScript } from '@islet/core/lua-script';
import { HEALTH_BUCKET_MS, HEALTH_TTL_SECONDS, LATENCY_BINS_PER_DOUBLING } from './health-buckets.ts';

/** Ended runs a create removes from the index at most (those past retention), oldest first. */
export const PRUNE_PER_CREATE = 4;

/** Feed entries kept per tenant (approximate trim): what a reconnecting events stream can resume. */
export const FEED_MAX_LEN = 1000;

/** Appends `<type> <id>` to a tenant's feed (`feed`: its key) and announces the tenant. */
export const feedLua = (feed: string, type: string, id: string, tenant: string) => `
redis.call('XADD', ${feed}, 'MAXLEN', '~', ${FEED_MAX_LEN}, '*', 'type', ${type}, 'id', ${id})
redis.call('PUBLISH', '${channels.tenantFeed}', ${tenant})
`;

/** A feed entry on its own (a decision asked or answered). KEYS: feed. ARGV: type, id, tenant. */
export const FEED_APPEND = new LuaScript(`${feedLua('KEYS[1]', 'ARGV[1]', 'ARGV[2]', 'ARGV[3]')}return 1`);

const FINAL = (v: string) => `(${v} == 'Completed' or ${v} == 'Failed' or ${v} == 'Cancelled')`;

/**
 * The index half of a run's create, for the tenant half's script. `k`: the five index keys and
 * the tenant's feed; `a`: ARGV expressions for run id, createdAt, summary JSON, session, principal
 * ('' = none), now ms, retention ms and the tenant. Also prunes up to PRUNE_PER_CREATE runs whose records have expired.
 */
export function indexCreateLua(k: string[], a: string[]): string {
  const [runs, summaries, ended, sessions, stats, feed] = k;
  const [id, createdAt, summary, session, principal, now, retentionMs, tenant] = a;
  return `${feedLua(feed ?? '', "'run'", id ?? '', tenant ?? '')}
redis.call('ZADD', ${runs}, ${createdAt}, ${id})
redis.call('HSET', ${summaries}, ${id}, ${summary})
if ${session} ~= '' then
  redis.call('ZADD', ${sessions}, 'GT', ${createdAt}, ${session})
  redis.call('HINCRBY', ${stats}, ${session} .. '\\ntotal', 1)
  redis.call('HSETNX', ${stats}, ${session} .. '\\ncreated', ${createdAt})
  if ${principal} ~= '' then redis.call('HSETNX', ${stats}, ${session} .. '\\nprincipal', ${principal}) end
end
local gone = redis.call('ZRANGEBYSCORE', ${ended}, '-inf', tonumber(${now}) - tonumber(${retentionMs}), 'LIMIT', 0, ${PRUNE_PER_CREATE})
for _, old in ipairs(gone) do
  local raw = redis.call('HGET', ${summaries}, old)
  local s = raw and cjson.decode(raw)
  if s and s.sessionId ~= '' then
    local left = redis.call('HINCRBY', ${stats}, s.sessionId .. '\\ntotal', -1)
    redis.call('HINCRBY', ${stats}, s.sessionId .. '\\n' .. s.status, -1)
    if left <= 0 then
      redis.call('HDEL', ${stats}, s.sessionId .. '\\ntotal', s.sessionId .. '\\nCompleted',
        s.sessionId .. '\\nFailed', s.sessionId .. '\\nCancelled', s.sessionId .. '\\nprincipal',
        s.sessionId .. '\\ncreated')
      redis.call('ZREM', ${sessions}, s.sessionId)
    end
  end
  redis.call('ZREM', ${runs}, old)
  redis.call('ZREM', ${ended}, old)
  redis.call('HDEL', ${summaries}, old)
end
`;
}

/**
 * A skill's index entry on its own: KEYS the five index keys, the feed and, for a skill in a session, the
 * session's run list (a session's runs are listed from it); ARGV as indexCreateLua's.
 */
export const INDEX_CREATE = new LuaScript(
  `${indexCreateLua(
    [1, 2, 3, 4, 5, 6].map((i) => `KEYS[${i}]`),
    [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `ARGV[${i}]`),
  )}if KEYS[7] then redis.call('ZADD', KEYS[7], ARGV[2], ARGV[1]) end
return 1`,
);

/**
 * The tenant half of a run's end: leaves the in-flight set and, when the run ended (its final
 * status given, or on one server read from the record, KEYS[10], which the run's final script
 * wrote just before on the same connection), records the end in the index, the day's usage and
 * the hour's health (health-store.ts: the end's 10 s bucket counts its status, its failure kind
 * and its latency, creation to end, in a log-scale histogram) once. KEYS: inflight, the five index
 * keys (runs unused), usage day (HASH), feed, health hour (HASH), [record]. ARGV: run id, final
 * status ('' = this end lost the race: only leave in-flight), ended ms, failure kind, output
 * bytes, binding calls, sandbox CPU ms, usage ttl seconds, tenant. Returns 1 when the index
 * recorded the end.
 */
export const FINISH_TENANT = new LuaScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
local status = ARGV[2]
local kind = ARGV[4]
if KEYS[10] then
  status = redis.call('HGET', KEYS[10], 'status') or ''
  kind = redis.call('HGET', KEYS[10], 'kind') or kind
end
if not ${FINAL('status')} then return 0 end
local raw = redis.call('HGET', KEYS[3], ARGV[1])
if not raw then return 0 end
local s = cjson.decode(raw)
if ${FINAL('s.status')} then return 0 end
local endedAt = tonumber(ARGV[3])
s.status = status
s.endedAt = endedAt
if kind ~= '' then s.kind = kind end
redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(s))
redis.call('ZADD', KEYS[4], endedAt, ARGV[1])
if s.sessionId ~= '' then
  redis.call('ZADD', KEYS[5], 'GT', endedAt, s.sessionId)
  redis.call('HINCRBY', KEYS[6], s.sessionId .. '\\n' .. status, 1)
end
redis.call('HINCRBY', KEYS[7], 'runs:' .. status, 1)
redis.call('HINCRBY', KEYS[7], 'wallMs', math.max(0, endedAt - (tonumber(s.createdAt) or endedAt)))
redis.call('HINCRBY', KEYS[7], 'outputBytes', tonumber(ARGV[5]) or 0)
redis.call('HINCRBY', KEYS[7], 'bindingCalls', tonumber(ARGV[6]) or 0)
redis.call('HINCRBY', KEYS[7], 'cpuMs', tonumber(ARGV[7]) or 0)
if s.style == 'skill' then redis.call('HINCRBY', KEYS[7], 'skillRuns', 1) end
redis.call('EXPIRE', KEYS[7], ARGV[8])
local bucket = math.floor(endedAt / ${HEALTH_BUCKET_MS}) .. '|'
local latency = math.max(1, endedAt - (tonumber(s.createdAt) or endedAt))
redis.call('HINCRBY', KEYS[9], bucket .. 'n:' .. status, 1)
if status == 'Failed' and kind ~= '' and kind ~= 'none' then redis.call('HINCRBY', KEYS[9], bucket .. 'k:' .. kind, 1) end
redis.call('HINCRBY', KEYS[9], bucket .. 'd:' .. math.floor(${LATENCY_BINS_PER_DOUBLING} * math.log(latency) / math.log(2)), 1)
redis.call('EXPIRE', KEYS[9], ${HEALTH_TTL_SECONDS})
${feedLua('KEYS[8]', "'run'", 'ARGV[1]', 'ARGV[9]')}return 1
`);

// Where a newest-first scan of a ZSET starts, as a local `start` (a rank): after the cursor's entry
// (ARGV[1] score, ARGV[2] member; by score when the member has left), and not before `until`
// (ARGV[4], exclusive).
const START = `
local start = 0
if ARGV[1] ~= '' then
  local r = redis.call('ZREVRANK', KEYS[1], ARGV[2])
  if r then start = r + 1 else start = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf') end
end
if ARGV[4] ~= '' then
  local u = redis.call('ZCOUNT', KEYS[1], ARGV[4], '+inf')
  if u > start then start = u end
end
local since = tonumber(ARGV[3])
local want = tonumber(ARGV[5])
local budget = tonumber(ARGV[6])
local scanned = 0
local last = ''
`;

/**
 * Newest-first candidates for a runs page. KEYS: runs, summaries. ARGV: cursor score, cursor id,
 * since, until, want, scan budget, session, principal, style ('' = any), final statuses wanted
 * (`*` any, comma-separated, '' none), '1' when runs not yet ended are wanted (their live status
 * is checked by the caller). Returns {summaries, position after the last one looked at ('' = the
 * index ended), entries looked at}.
 */
export const LIST_RUNS = new LuaScript(`${START}
local finals = {}
local anyFinal = ARGV[10] == '*'
for st in string.gmatch(ARGV[10], '[^,]+') do finals[st] = true end
local live = ARGV[11] == '1'
local out = {}
while scanned < budget do
  local chunk = math.min(200, budget - scanned)
  local rows = redis.call('ZREVRANGE', KEYS[1], start, start + chunk - 1, 'WITHSCORES')
  if #rows == 0 then return {out, '', scanned} end
  local ids = {}
  for i = 1, #rows, 2 do ids[#ids + 1] = rows[i] end
  local raws = redis.call('HMGET', KEYS[2], unpack(ids))
  for i = 1, #ids do
    local score = rows[i * 2]
    if since and tonumber(score) < since then return {out, '', scanned} end
    scanned = scanned + 1
    start = start + 1
    last = score .. ':' .. ids[i]
    local raw = raws[i]
    if raw then
      local s = cjson.decode(raw)
      local ok = (ARGV[7] == '' or s.sessionId == ARGV[7]) and (ARGV[8] == '' or s.principal == ARGV[8])
        and (ARGV[9] == '' or s.style == ARGV[9])
      if ok then
        if ${FINAL('s.status')} then ok = anyFinal or finals[s.status] == true else ok = live end
      end
      if ok then
        out[#out + 1] = raw
        if #out >= want then return {out, last, scanned} end
      end
    end
  end
  if #ids < chunk then return {out, '', scanned} end
end
return {out, last, scanned}
`);

/**
 * A sessions page, latest activity first. KEYS: sessions, session stats. ARGV: cursor score,
 * cursor session, since, until (last activity), want, scan budget, principal ('' = any). Returns
 * {[session, last activity, field, value, …], position after the last one ('' = none left)}.
 */
export const LIST_SESSIONS = new LuaScript(`${START}
local fields = {'total', 'Completed', 'Failed', 'Cancelled', 'principal', 'created'}
local out = {}
while scanned < budget do
  local chunk = math.min(200, budget - scanned)
  local rows = redis.call('ZREVRANGE', KEYS[1], start, start + chunk - 1, 'WITHSCORES')
  if #rows == 0 then return {out, ''} end
  for i = 1, #rows, 2 do
    local session, score = rows[i], rows[i + 1]
    if since and tonumber(score) < since then return {out, ''} end
    scanned = scanned + 1
    start = start + 1
    last = score .. ':' .. session
    local names = {}
    for j, f in ipairs(fields) do names[j] = session .. '\\n' .. f end
    local values = redis.call('HMGET', KEYS[2], unpack(names))
    if ARGV[7] == '' or values[5] == ARGV[7] then
      local row = {session, score}
      for j, f in ipairs(fields) do
        if values[j] then
          row[#row + 1] = f
          row[#row + 1] = values[j]
        end
      end
      out[#out + 1] = row
      if #out >= want then return {out, last} end
    end
  end
  if #rows < chunk * 2 then return {out, ''} end
end
return {out, last}
`);
