/**
 * The idle worker's registration for the direct hand-off (handoff-scripts.ts has the hand-off
 * itself and the keys' layout): a worker registers before its blocking pop (`REGISTER_IDLE`), takes
 * its registration back after a pop that brought no hand-off (`TAKE_BACK`), and when it closes ends
 * its pop and refuses late registrations (`CLOSE_IDLE`), then takes whatever was handed to it and
 * never popped (`TAKE_LEFT`).
 */
import { LuaScript } from '@islet/core/lua-script';

/**
 * Registers a worker idle unless a hand-off to it is still pending (its blocking pop takes that
 * first), it closed, or the queue's marker stands (KEYS[5], optional): the blocking pop sent right
 * behind this script is then served the marker at once, and a registration written anyway would
 * stand, with no pop blocked, until the worker's `TAKE_BACK` — a submit in that round trip would
 * hand the job to a worker already woken (round 48 `pop-registration`: ~65 % of the hand-offs taken
 * back at 6 clients). Refused, nothing stands, and the worker sends no `TAKE_BACK` after its pop.
 * KEYS idle, idle args, the worker's hand-off key, its closed mark, the queue's marker; ARGV worker
 * id, time to live ms, terms (JSON of `IdleTerms`). Returns 1 when registered.
 */
export const REGISTER_IDLE = new LuaScript(`redis.set_repl(redis.REPL_NONE)
if redis.call('EXISTS', KEYS[3], KEYS[4], KEYS[5] or KEYS[4]) > 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The expiry as Redis prints a whole number (its digits), by '%d' rather than its float printer.
local expiry = now + tonumber(ARGV[2])
if expiry == math.floor(expiry) and expiry < 2 ^ 52 then expiry = string.format('%d', expiry) end
redis.call('ZADD', KEYS[1], expiry, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1`);

/**
 * Sent after the worker's blocking pop returned without a hand-off (the marker, the timeout), before
 * it fetches: the registration goes, and a job handed after the pop was served (the marker came
 * first, or in between) is taken. Nothing of a registration outlives that. Not propagated
 * when it only removes the registration (nothing to replay); the removal of a hand-off it takes is
 * propagated: an add of the previous release propagated the hand-off (a newer one does not, and the
 * removal then replays as a no-op). A registration still standing was
 * taken by no hand-off (the hand-off removes it with its terms), so nothing is looked for; one gone
 * took its terms with it (every script removes both), so only a hand-off is. KEYS idle, idle args, the worker's
 * hand-off key; ARGV the worker id. Returns the hand-off taken (cmsgpack of {token, answer}) or nil.
 */
export const TAKE_BACK = new LuaScript(`redis.set_repl(redis.REPL_NONE)
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return false
end
local pending = redis.call('ZRANGEBYSCORE', KEYS[3], 0, 0, 'LIMIT', 0, 1)
if not pending[1] then return false end
redis.set_repl(redis.REPL_ALL)
redis.call('ZREM', KEYS[3], pending[1])
return pending[1]`);

/**
 * `TAKE_BACK` sent with the worker's fetch (round 49 `fetch-takeback`): after a pop that brought no
 * hand-off, the worker's next fetch (the runner's fused fetch, fetch-start-store.ts) carries the
 * take-back instead of a round trip of its own before it. Put before a fetch script's text: its
 * call's KEYS end in idle, idle args, the worker's hand-off key, its ARGV in the worker id, and this
 * takes them off (as the fused fetch's deferral takes its delay) before the fetch reads either. The
 * registration standing: removed (not propagated), and the fetch runs. Gone: a submit took it, so
 * the job it handed is taken off the worker's key (the removal propagated, as TAKE_BACK's), its
 * lock moved from the registration's token to this fetch's (BullMQ's options, ARGV[3]: the job is
 * then what this fetch brought, under its token) and its answer (the fused fetch's, made by the
 * submit) is this call's. The answer's removal decides who owns the job, as everywhere: a
 * gateway's reclaim that took it first leaves nothing here, and a lock that is not the hand-off's
 * token any more (the job given back meanwhile) leaves the job to the fetch that follows.
 */
export const FETCH_TAKE_BACK = `local takeBackWorker = table.remove(ARGV)
local takeBackKey = table.remove(KEYS)
local takeBackArgs = table.remove(KEYS)
local takeBackIdle = table.remove(KEYS)
redis.set_repl(redis.REPL_NONE)
local stood = redis.call('ZREM', takeBackIdle, takeBackWorker) == 1
if stood then redis.call('HDEL', takeBackArgs, takeBackWorker) end
redis.set_repl(redis.REPL_ALL)
if not stood then
  local pending = redis.call('ZRANGEBYSCORE', takeBackKey, 0, 0, 'LIMIT', 0, 1)[1]
  if pending then
    redis.call('ZREM', takeBackKey, pending)
    local ok, handed = pcall(cmsgpack.unpack, pending)
    local answer = ok and type(handed) == 'table' and handed[2]
    local id = type(answer) == 'table' and answer[2]
    if type(id) == 'string' then
      local opts = cmsgpack.unpack(ARGV[3])
      local lockKey = ARGV[1] .. id .. ':lock'
      if redis.call('GET', lockKey) == handed[1] then
        redis.call('SET', lockKey, opts['token'], 'PX', opts['lockDuration'])
        return answer
      end
    end
  end
end
`;

/** What a closing worker puts on its hand-off key to end its blocking pop (after any hand-off: score 1). */
const CLOSING_MEMBER = 'closing';

/**
 * A closing worker's registration goes (no hand-off after this), and its blocking pop is woken
 * (`CLOSING_MEMBER`, behind any job handed to it); its closed mark (for ARGV[2] ms) refuses a
 * registration still on its way. KEYS idle, idle args, the worker's hand-off key, its closed mark;
 * ARGV the worker id, the mark's life ms.
 */
export const CLOSE_IDLE = new LuaScript(`redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], 1, '${CLOSING_MEMBER}')
redis.call('SET', KEYS[4], 1, 'PX', ARGV[2])
return 1`);

/** Empties a closing worker's hand-off key; returns a job handed to it and never popped (cmsgpack of {token, answer}) or nil. */
export const TAKE_LEFT = new LuaScript(`local left = redis.call('ZRANGEBYSCORE', KEYS[1], 0, 0, 'LIMIT', 0, 1)
redis.call('DEL', KEYS[1])
return left[1]`);

/**
 * A hand-off its worker never took (round 45 `crash-handoff`): a worker blocked in its pop takes a
 * job handed to it in the same Redis turn as the add (Redis serves the pop and so removes the
 * answer from the key before any other client's command), so an answer still on a worker's
 * hand-off key a while after the add means its worker died while registered (SIGKILL, OOM kill), or
 * is between a pop that brought none and its `TAKE_BACK`. The add's gateway then takes it here:
 * the answer off the key and the job back from active to the head of its wait list (BullMQ's
 * moveJobFromActiveToWait-9 with the handed token, its `waiting` event), where a live worker fetches
 * it, instead of the job waiting for the stalled check (its 30 s lock, then up to two 15 s checks).
 * The answer's removal is what decides: the worker's pop, `TAKE_BACK`, `TAKE_LEFT` and this script
 * each take it atomically, so exactly one of them owns the job (never run twice). Its lease is left
 * for the job's next fetch, which finds it held for that job (a reservation) as after a stalled
 * job's return. KEYS: the worker's hand-off key, then moveJobFromActiveToWait-9's nine (the queue's
 * active, wait, stalled, paused, meta, limiter, prioritized, marker, events). ARGV: the token the
 * add handed the job under, the queue's key prefix (BullMQ's `keys['']`). Returns 0 when the answer
 * is not there (taken) or not that hand-off's, else {1, job id, BullMQ's answer (0 or its pttl; a
 * negative code when the lock was not the token's any more: the job is then left as it is)}.
 */
export function reclaimHandedScript(moveToWaitBody: string): LuaScript {
  return new LuaScript(`local pending = redis.call('ZRANGEBYSCORE', KEYS[1], 0, 0, 'LIMIT', 0, 1)
local member = pending[1]
if not member then return 0 end
local ok, handed = pcall(cmsgpack.unpack, member)
if not ok or type(handed) ~= 'table' or handed[1] ~= ARGV[1] then return 0 end
redis.call('ZREM', KEYS[1], member)
local answer = handed[2]
local id = type(answer) == 'table' and answer[2]
if type(id) ~= 'string' then return {1, false, 0} end
local function moveBack(KEYS, ARGV)
${moveToWaitBody}
end
return {1, id, moveBack({unpack(KEYS, 2, 10)}, {id, ARGV[1], ARGV[2] .. id})}`);
}
