/**
 * BullMQ's own script texts (addStandardJob-9, moveToActive-11, moveToFinished-14, as BullMQ sends
 * them) run inside Islet's fused scripts with a `redis` of their own: `bullCall` answers, without
 * asking Redis, the commands whose effect no reader of this system needs, and sends every other
 * command as it is. What it leaves out, and why that is safe:
 * - The queue's events stream (`<queue>events`: XADD of added, waiting, active, completed, drained;
 *   XTRIM; the `opts.maxLenEvents` HGET in meta that sizes both). Its one reader is BullMQ's
 *   `QueueEvents`, used only by the skills service, which waits for a skill job's `completed` or
 *   `failed` entry: a skill job's completion never runs here (a fused completion carries a run's
 *   end), so those entries are still written by BullMQ's own script. Bull-board, the console, the
 *   operator's depth and the runner read lists, sets and job hashes, never the stream.
 * - The job counter's INCR (`<queue>id`) for a job added with its own id (every run and skill
 *   job): BullMQ uses the counter only to name a job added without one ("increases the job counter
 *   if needed", its script's words).
 * - A second identical read of the queue's meta (`HMGET paused concurrency max duration`: the add
 *   and the fetch run in one script), and a second `ZADD marker 0 0` with no marker command in
 *   between (the add's and then the fetch's): Redis would answer the same, and change nothing.
 * - Reads of keys that one multi-key EXISTS (`bullProbe`) found absent, and no-op removals from
 *   them (the job's `:dependencies`/`:unsuccessful`, the prioritized and delayed sets, the priority
 *   counter `pc`), answered as Redis answers for an absent key, until a command that could create
 *   one of them goes (it goes to Redis, and the key is no longer taken as absent).
 * - The drained check behind a completion that brought no next job (two LLENs and a ZCARD whose
 *   one use is the `drained` entry of the events stream; taken out of the text when it is there).
 * - The completed (or failed) set's retention trim (`removeOnComplete`/`removeOnFail`: the age's
 *   ZREVRANGEBYSCORE, the count's ZREVRANGE and ZREMRANGEBYRANK) on 63 completions in 64 (the
 *   completion's time, ms, not a multiple of 64): the one that trims removes every job past the
 *   count and up to 1000 past the age, as BullMQ does on each. The set bounds memory; no reader
 *   needs it cut to the exact count at every moment (bull-board lists it; a late duplicate add of
 *   a run finds its job kept a little longer, as the hour's retention wants), and BullMQ's own
 *   completions (older runners, skill jobs) trim it on each as before.
 * - The job's start (`processedOn` and `pb` by HMSET, `ats` by HINCRBY, then HGETALL, whose
 *   answer is the job the worker runs) as one HGETALL and one HSET of the same fields with `ats`
 *   one more than the HGETALL read, the answer patched with them: the hash ends as BullMQ's three
 *   commands leave it, the worker gets the same fields, and the marker's ZADD between them (another
 *   key) is done first. HINCRBY's answer was unused; a text without these lines, or an `ats` that
 *   is not an integer, keeps BullMQ's three commands. In the hand-off's add (handoff-scripts.ts),
 *   the HGETALL of a job that add itself has just created (its one HMSET, nothing since) is
 *   answered from what that HMSET wrote (`bullQ.known`): the same fields and values, which the
 *   worker reads by name.
 * - A completion's `atm` (attempts made) by HINCRBY before its HSET of the result and finish time:
 *   the job's HMGET just before (parent, dedup id) reads `atm` too, and the HSET writes it, one
 *   more; nothing between them touches the job's `atm`, and HINCRBY's answer is the same number.
 *   An `atm` that is not an integer keeps the HINCRBY (the HSET then writes what it answered).
 * - A run's completion's SREM of its job from the stalled set (removeLock, after the lock's DEL).
 *   The set's one reader is BullMQ's stalled check (moveStalledJobsToWait, every runner's own),
 *   which acts on a member only when its lock is missing and an LREM finds it in `active`, and then
 *   replaces the set with `active`'s jobs; the completed job has left `active` in the same script,
 *   and is back there only by a fetch that locks it, so the member it leaves (only a job that was
 *   active at the last check is in the set at all) changes nothing and is gone at the next check.
 * - A completion's `EXISTS` of its job: the job's `HMGET` of parent, dedup id and `atm` (read a few
 *   lines later) goes there instead, with `timestamp`, which every add writes; a job with one
 *   exists, and only a job without it (missing, or a hash no add wrote) is asked by EXISTS as before.
 *   Nothing between the two reads writes the job, unless BullMQ's `fieldsToUpdate` (ARGV[9]) is
 *   given: then the later HMGET goes as it did.
 * - A completion's lock `GET` then `DEL` (removeLock, the token's check): one `GETDEL`. A lock
 *   another worker holds (its token not ours: the job stalled and was fetched again) is put back at
 *   once with its token and the completing worker's lock duration (the runners share one), as its
 *   holder's next renewal would set it; only its remaining time is lost (at most a duration more
 *   before a dead holder's job is found stalled, on a path that follows a stall already).
 * Nothing else differs: the job hash, the wait/active/completed lists and sets, the lock, stalled
 * set and marker are written as BullMQ writes them, so BullMQ's own scripts (an older runner or
 * gateway on the same queue, a skill job's completion) read and write them as before; they go on
 * writing their events, trimmed by their own XADDs' MAXLEN.
 */

import { BULL_START_JOB } from './bull-start.ts';
import { knownPacked } from './handed-complete.ts';

/**
 * Defines `bullQ` (the script's knowledge), `bullRaw`, `bullCall`, `bullProbe`, `bullRedis`. Once a
 * script. `bullCall` runs for every command of BullMQ's texts, so its common case (a key with no
 * role, not taken as absent) costs two table reads and the call: a key's role (`bullRole`, set by
 * `bullSet`) picks the one branch that can apply, and only a command on a key with a role, or one
 * taken as absent, upper-cases its name (a handful a script: a table of names, made each script
 * call, cost more than it saved, test/bench/lua-cost.ts). Tables a script may not need (the meta
 * reads kept, what an absent key answers) are made when first needed. The queue's keys with a
 * role (events, meta, id, marker, stalled, the completed set) are distinct keys, one role each.
 * `bullQ` is made with its usual fields (false: read as nil is) so that setting them does not grow
 * its table three times (~1.4 K instructions a script; test/bench/README.md round 52 `submit-lean`).
 */
const PRELUDE_CORE = `local bullQ = {absent = {}, events = false, metaKey = false, marker = false, meta = false, known = false, marked = false, ownId = false}
local bullRaw = redis.call
local bullRole, bullAbsent = {}, bullQ.absent
-- A role's key: the key it had before has it no more.
local function bullSet(role, key)
  local old = bullQ[role]
  if old ~= nil and bullRole[old] == role then bullRole[old] = nil end
  bullQ[role] = key
  if key ~= nil then bullRole[key] = role end
end
local function bullCall(cmd, key, ...)
  local role = bullRole[key]
  if role then
    local c = string.upper(cmd)
    if role == 'events' then
      if c == 'XADD' then return '0-0' end
      if c == 'XTRIM' then return 0 end
    elseif role == 'metaKey' then
      if c == 'HMGET' then
        local fields = table.concat({...}, '\\n')
        local memo = bullQ.meta
        if not memo then
          memo = {}
          bullQ.meta = memo
        end
        local seen = memo[fields]
        if not seen then
          seen = bullRaw(cmd, key, ...)
          memo[fields] = seen
        end
        return seen
      end
      if c == 'HGET' and select('#', ...) == 1 and ... == 'opts.maxLenEvents' then return '10000' end
      bullQ.meta = nil
    elseif role == 'marker' then
      if c == 'ZADD' and select('#', ...) == 2 and tostring((...)) == '0' and tostring(select(2, ...)) == '0' then
        if bullQ.marked then return 0 end
        bullQ.marked = true
      else
        bullQ.marked = false
      end
    elseif role == 'stalled' then
      if c == 'SREM' then return 0 end
    elseif role == 'id' then
      if c == 'INCR' and bullQ.ownId then return 0 end
    elseif role == 'untrimmed' then
      if c == 'ZREMRANGEBYRANK' then return 0 end
      if c == 'ZREVRANGE' or c == 'ZREVRANGEBYSCORE' then return {} end
    end
  end
  if bullAbsent[key] then
    local c = string.upper(cmd)
    -- What Redis answers for an absent key, by command: made when a key is first taken as absent
    -- (here, not by a function of its own: one more made at every call, round 48 \`submit-closures\`).
    bullQ.empty = bullQ.empty or {ZRANGEBYSCORE = 1, ZRANGE = 1, ZREVRANGE = 1, ZREVRANGEBYSCORE = 1,
      ZPOPMIN = 1, HGETALL = 1, LRANGE = 1, SMEMBERS = 1, ZCARD = 0, LLEN = 0, SCARD = 0, EXISTS = 0,
      DEL = 0, ZREM = 0, SREM = 0, LREM = 0, HDEL = 0, HGET = false, GET = false, RPOPLPUSH = false}
    local empty = bullQ.empty[c]
    if empty ~= nil and (c ~= 'EXISTS' or select('#', ...) == 0) then
      if empty == 1 then return {} end
      return empty
    end
    bullAbsent[key] = nil
  end
  return bullRaw(cmd, key, ...)
end
`;

const PRELUDE_PROBE = `local function bullProbe(...)
  if bullRaw('EXISTS', ...) ~= 0 then return false end
  for _, k in ipairs({...}) do bullQ.absent[k] = true end
  return true
end`;

const PRELUDE_REDIS = `local bullRedis = setmetatable({call = bullCall}, {__index = redis})`;

const PRELUDE_KEEP_LOCK = `-- A lock of another worker's taken by removeLock's GETDEL: put back (its time left unknown: the
-- duration a renewal gives, the completing worker's, BullMQ's default without one).
local function bullKeepLock(key, token)
  bullRaw('SET', key, token, 'PX', tonumber(bullQ.lockMs) or 30000)
end`;

const PRELUDE_ATTEMPTS = `local function bullAttempts(jobKey, atm)
  -- A first completion's count as the text Redis would print for the number 1 (a number argument
  -- is printed with %.17g, ~2,500 instructions); its readers take it by tonumber or as an argument.
  if not atm then return '1' end
  local n = tonumber(atm)
  if n and n == math.floor(n) and n >= 0 and n < 2 ^ 52 then return n + 1 end
  return bullRaw('HINCRBY', jobKey, 'atm', 1)
end`;

/** The whole prelude, every helper in it (`bullQuietPrelude` leaves out those a text never calls). */
export const BULL_QUIET_PRELUDE = `${PRELUDE_CORE}${PRELUDE_PROBE}
${PRELUDE_REDIS}
${PRELUDE_KEEP_LOCK}
${PRELUDE_ATTEMPTS}
${BULL_START_JOB}`;

/**
 * The prelude for a script whose text after it is `body`: the helpers `body` never calls
 * (`bullProbe`, `bullKeepLock`, `bullAttempts`: a completion's; `bullStartJob`: a fetch's) left
 * out. Each `local function` of a script is made at every call of it, with a lookup of each local
 * it reads (`luaF_findupval`) and its closing: ~1 K instructions a helper no line calls (the
 * hand-off's add and a fetch call none of the completion's three; test/bench/README.md round 48
 * `submit-closures`). The same text, in the same order, as `BULL_QUIET_PRELUDE` where `body` calls
 * them all.
 */
export function bullQuietPrelude(body: string): string {
  const calls = (name: string) => body.includes(`${name}(`);
  const parts = [
    calls('bullProbe') ? `${PRELUDE_CORE}${PRELUDE_PROBE}` : PRELUDE_CORE.trimEnd(),
    PRELUDE_REDIS,
  ];
  if (calls('bullKeepLock')) parts.push(PRELUDE_KEEP_LOCK);
  if (calls('bullAttempts')) parts.push(PRELUDE_ATTEMPTS);
  // A fetch's text may hold its own, made only where the fetch runs (handoff-scripts.ts `fetchAndLook`).
  if (calls('bullStartJob') && !body.includes('local function bullStartJob(')) parts.push(BULL_START_JOB);
  return parts.join('\n');
}

/** addStandardJob-9's INCR of the job counter, as BullMQ 5 writes it (its `args[2]`: the job's own id, or ''). */
const ADD_COUNTER = 'local jobCounter = rcall("INCR", KEYS[4])';

/**
 * addStandardJob-9's text run through `bullCall` (in a script that has the prelude): KEYS[8] is
 * its events stream, KEYS[3] meta, KEYS[9] the marker. The job counter's INCR goes only for a job
 * without an id of its own: decided by BullMQ's own unpacked arguments where the text is BullMQ 5's,
 * else by unpacking them once more (KEYS[4], the counter, answered 0 for a job with its own id).
 * `first`: Lua run after the roles are set, before BullMQ's text (the hand-off's direct add).
 */
export function quietAdd(addBody: string, first = ''): string {
  const roles = `local redis = bullRedis
bullSet('events', KEYS[8])
bullSet('metaKey', KEYS[3])
bullSet('marker', KEYS[9])${first ? `\n${first}` : ''}`;
  if (addBody.split(ADD_COUNTER).length === 2)
    return `${roles}
${addBody.replace(
  ADD_COUNTER,
  'local jobCounter = (type(args[2]) == "string" and args[2] ~= "") and 0 or rcall("INCR", KEYS[4]) -- (bull-quiet.ts)',
)}`;
  return `${roles}
bullSet('id', KEYS[4])
local bullArgs = cmsgpack.unpack(ARGV[1])
bullQ.ownId = type(bullArgs[2]) == 'string' and bullArgs[2] ~= ''
${addBody}`;
}

/** addBaseMarkerIfNeeded's ZADD (moveToActive-11, moveToFinished-14), its score a Lua number (BullMQ 5). */
const BASE_MARKER = 'rcall("ZADD", markerKey, 0, "0")';

/**
 * The base marker's score handed as the text Redis prints for it (a number argument costs Redis a
 * `%.17g` print, ~2,200 instructions: test/bench/README.md round 35, `end-lua`): the same bytes, and
 * `bullCall`'s marker check takes either. Once there, or unchanged.
 */
function quietMarker(body: string): string {
  if (body.split(BASE_MARKER).length !== 2) return body;
  return body.replace(BASE_MARKER, 'rcall("ZADD", markerKey, "0", "0") -- (bull-quiet.ts)');
}

/** The job's start in prepareJobForProcessing (moveToActive-11 and moveToFinished-14), BullMQ 5. */
const START_JOB =
  /rcall\("HMSET", jobKey, "processedOn", processedOn, unpack\(optionalValues\)\)\s*rcall\("HINCRBY", jobKey, "ats", 1\)\s*addBaseMarkerIfNeeded\(markerKey, false\)\s*(?:--[^\n]*\s*)*return \{rcall\("HGETALL", jobKey\), jobId, 0, 0\}/g;

/** A text's job start as `bullStartJob` (the text unchanged where it is not BullMQ 5's). */
function quietStart(body: string): string {
  return quietMarker(body).replace(
    START_JOB,
    'addBaseMarkerIfNeeded(markerKey, false)\n  return {bullStartJob(jobKey, processedOn, optionalValues), jobId, 0, 0} -- (bull-quiet.ts)',
  );
}

/** moveToActive-11's text run through `bullCall`: KEYS[4] events, KEYS[9] meta, KEYS[11] marker. */
export function quietFetch(fetchBody: string): string {
  return `local redis = bullRedis
bullSet('events', KEYS[4])
bullSet('metaKey', KEYS[9])
bullSet('marker', KEYS[11])
${quietStart(fetchBody)}`;
}

/** One completion in this many trims the completed/failed set (by its time, ms). */
const TRIM_EVERY = 64;

/** moveToFinished-14's check for the `drained` event, as BullMQ 5 writes it. */
const DRAINED_CHECK =
  /local waitLen = rcall\("LLEN", KEYS\[1\]\)\s*if waitLen == 0 then\s*local activeLen = rcall\("LLEN", KEYS\[2\]\)\s*if activeLen == 0 then\s*local prioritizedLen = rcall\("ZCARD", KEYS\[3\]\)\s*if prioritizedLen == 0 then\s*rcall\("XADD", eventStreamKey, "\*", "event", "drained"\)\s*end\s*end\s*end/;

/** moveToFinished-14's `atm` increment and the writes around it, as BullMQ 5 writes them. */
const ATM_READ = 'local jobAttributes = rcall("HMGET", jobIdKey, "parentKey", "parent", "deid")';
const ATM_INCR = 'local attemptsMade = rcall("HINCRBY", jobIdKey, "atm", 1)';
const ATM_WRITE = 'rcall("HSET", jobIdKey, ARGV[3], ARGV[4], "finishedOn", timestamp)';

/** moveToFinished-14's removal from the active list, its count a Lua number (BullMQ 5). */
const ACTIVE_LREM = 'rcall("LREM", KEYS[2], -1, jobId)';

/**
 * The count handed as the text Redis prints for it (a number argument costs Redis a `%.17g` print,
 * ~2,500 instructions a call: test/bench/README.md round 35, `end-lua`): the same bytes. Once there, or unchanged.
 */
function quietRemove(body: string): string {
  if (body.split(ACTIVE_LREM).length !== 2) return body;
  return body.replace(ACTIVE_LREM, 'rcall("LREM", KEYS[2], "-1", jobId) -- (bull-quiet.ts)');
}

/** A completion's `atm` read with the job's attributes and written with its result (all three lines there, or none changed). */
function quietAttempts(body: string): string {
  if (![ATM_READ, ATM_INCR, ATM_WRITE].every((line) => body.split(line).length === 2)) return body;
  return body
    .replace(ATM_READ, 'local jobAttributes = rcall("HMGET", jobIdKey, "parentKey", "parent", "deid", "atm")')
    .replace(ATM_INCR, 'local attemptsMade = bullAttempts(jobIdKey, jobAttributes[4]) -- (bull-quiet.ts)')
    .replace(
      ATM_WRITE,
      'rcall("HSET", jobIdKey, ARGV[3], ARGV[4], "finishedOn", timestamp, "atm", attemptsMade)',
    );
}

/** moveToFinished-14's check that the job exists, as BullMQ 5 writes it. */
const JOB_EXISTS = 'if rcall("EXISTS", jobIdKey) == 1 then -- Make sure job exists';
/** The job's attributes as `quietAttempts` reads them. */
const ATM_READ_QUIET = 'local jobAttributes = rcall("HMGET", jobIdKey, "parentKey", "parent", "deid", "atm")';

/**
 * A completion's job read once: its attributes (`quietAttempts`' HMGET) at the existence check, with
 * the `timestamp` every add writes; EXISTS only when that is missing. Both lines there, or none changed.
 */
function quietExists(body: string, read = ''): string {
  if (![JOB_EXISTS, ATM_READ_QUIET].every((line) => body.split(line).length === 2)) return body;
  return body
    .replace(
      JOB_EXISTS,
      `local bullJob = ${read}rcall("HMGET", jobIdKey, "parentKey", "parent", "deid", "atm", "timestamp")
if bullJob[5] or rcall("EXISTS", jobIdKey) == 1 then -- Make sure job exists (bull-quiet.ts)`,
    )
    .replace(
      ATM_READ_QUIET,
      `local jobAttributes = bullJob -- (bull-quiet.ts)
    if (ARGV[9] or '') ~= '' then jobAttributes = rcall("HMGET", jobIdKey, "parentKey", "parent", "deid", "atm") end`,
    );
}

/** removeLock's token check and removal, its mismatch, and moveToFinished-14's call of it (BullMQ 5). */
const LOCK_TAKE =
  /local lockToken = rcall\("GET", lockKey\)\s*if lockToken == token then\s*rcall\("DEL", lockKey\)/g;
const LOCK_MISMATCH = /if lockToken then\s*-- Lock exists but token does not match\s*return -6/g;
const LOCK_CALL = 'local errorCode = removeLock(jobIdKey, KEYS[5], token, ARGV[1])';

/** A completion's lock checked and removed by one GETDEL (all three there once, or none changed). */
function quietLock(body: string): string {
  const once = (re: RegExp) => (body.match(re) ?? []).length === 1;
  if (!once(LOCK_TAKE) || !once(LOCK_MISMATCH) || body.split(LOCK_CALL).length !== 2) return body;
  return body
    .replace(
      LOCK_TAKE,
      'local lockToken = rcall("GETDEL", lockKey) -- (bull-quiet.ts)\n    if lockToken == token then',
    )
    .replace(
      LOCK_MISMATCH,
      'if lockToken then\n        bullKeepLock(lockKey, lockToken) -- (bull-quiet.ts)\n        return -6',
    )
    .replace(LOCK_CALL, `bullQ.lockMs = opts['lockDuration']\n    ${LOCK_CALL}`);
}

/** How many times the ask names the wait list: more than all its other keys together. */
const WAIT_WEIGHT = 7;

/**
 * What a completion (moveToFinished-14's `KEYS`, `ARGV`, named by `keys` and `argv`) would ask
 * in its first probe, asked earlier in the caller's script with a key of the caller's own
 * (`own`, a Lua expression) in one EXISTS, the answers noted in the table `seen` for
 * `quietComplete`: `#absent` (true: `own` and the probe's five keys all absent) and `#noWait`
 * (true: the wait list is absent, so the next fetch's RPOPLPUSH finds nothing and is answered
 * here). EXISTS counts a key named n times n times: the wait list is named 7 times, more
 * than the six others can add up to, so the count answers both questions. A failure's completion
 * probes nothing: nothing is asked. The caller must write none of the queue's keys before the
 * completion runs (the run's end and a release that finds its waiting list empty write none).
 */
export function quietCompleteAsk(keys: string, argv: string, seen: string, own: string): string {
  const wait = Array.from({ length: WAIT_WEIGHT }, () => `${keys}[1]`).join(', ');
  return `if ${argv}[5] == 'completed' then
  local job = ${keys}[12]
  local n = redis.call('EXISTS', ${own}, job .. ':dependencies', job .. ':unsuccessful', ${keys}[3], ${keys}[10], ${keys}[7], ${wait})
  ${seen}['#absent'] = n % ${WAIT_WEIGHT} == 0
  ${seen}['#noWait'] = n < ${WAIT_WEIGHT}
end`;
}

/**
 * moveToFinished-14's text run through `bullCall`, with its own prelude: KEYS[4] events, KEYS[5]
 * stalled, KEYS[9] meta, KEYS[14] marker. A completion first asks, in one EXISTS, whether the job's
 * `:dependencies` and `:unsuccessful` (read before a completion), the prioritized set, the priority
 * counter and the delayed set (read by the fetch of the next job) all are absent; a queue holding
 * delayed jobs (fair-share deferrals) asks again without it.
 * `seen` (a Lua expression, 'nil' for none): the table `quietCompleteAsk` noted its answers in,
 * earlier in the same script with nothing of the queue's written between. `#absent` true: all
 * absent (no probe here); false: one of them or the caller's own key was there (the second probe
 * only, as a queue holding deferrals asks); nil: not asked (both probes here, as before).
 * `#noWait`: the wait list is taken as absent too (until a command that could create it goes).
 */
export function quietComplete(completeBody: string, seen = 'nil', direct?: string, known?: string): string {
  // The roles (what `bullSet` would leave on the prelude's fresh tables, in its order) and the
  // absent keys each made by one constructor, at their size: set key by key, `bullRole`, `bullQ`
  // and the absent set grew and were rehashed ~12 times, ~11,000 instructions an end
  // (test/bench/README.md round 35, `end-lua`). The prelude's closures share these locals.
  // The direct completion (handed-complete.ts) first, before the prelude: refused after its read of
  // the job, the text takes that read as its own (`quietExists`).
  // Its function made only where the end's EXISTS asked (a completion; a failure is refused at once:
  // a closure made for nothing cost ~2-3 K instructions).
  // Its second probe (the end's EXISTS found a key there: a queue holding deferrals) is not sent
  // again by the text: `bullProbed` true, the four keys absent; false, one there (none noted).
  // `known` (a Lua expression): a baked end's parts of the worker's packed options (end-options.ts),
  // read by the direct completion in place of an unpack; the packed bytes made again for the text.
  const handed = direct
    ? `local bullJobRead, bullProbed
if ${seen} and ${seen}['#absent'] ~= nil then
${direct}
  local bullHanded
  bullJobRead, bullHanded, bullProbed = handedComplete(KEYS, ARGV, ${seen}${known ? `, ${known}` : ''})
  if bullHanded ~= nil then return bullHanded end
end
`
    : '';
  const first = known ? `${handed}${knownPacked('ARGV', known)}\n` : handed;
  const probe =
    'if asked == false or not bullProbe(deps, failedDeps, KEYS[3], KEYS[10], KEYS[7]) then\n      bullProbe(deps, failedDeps, KEYS[3], KEYS[10])\n    end';
  const probes = direct
    ? `if bullProbed then
      bullAbsent[deps], bullAbsent[failedDeps], bullAbsent[KEYS[3]], bullAbsent[KEYS[10]] = true, true, true, true
    elseif bullProbed == nil then
      ${probe}
    end`
    : probe;
  return `${first}${BULL_QUIET_PRELUDE}
local redis = bullRedis
local bullUntrimmed, bullCompleted = tonumber(ARGV[2]) % ${TRIM_EVERY} ~= 0, ARGV[5] == 'completed'
bullRole = {[KEYS[4]] = 'events', [KEYS[9]] = 'metaKey', [KEYS[14]] = 'marker',
  [KEYS[11]] = bullUntrimmed and 'untrimmed' or nil, [KEYS[5]] = bullCompleted and 'stalled' or nil}
bullQ = {absent = bullAbsent, events = KEYS[4], metaKey = KEYS[9], marker = KEYS[14],
  untrimmed = bullUntrimmed and KEYS[11] or nil, stalled = bullCompleted and KEYS[5] or nil}
if bullCompleted then
  local deps, failedDeps = KEYS[12] .. ':dependencies', KEYS[12] .. ':unsuccessful'
  local bullSeen = ${seen}
  local asked = bullSeen and bullSeen['#absent']
  if asked then
    bullAbsent = {[deps] = true, [failedDeps] = true, [KEYS[3]] = true, [KEYS[10]] = true, [KEYS[7]] = true,
      [KEYS[1]] = bullSeen['#noWait'] or nil}
    bullQ.absent = bullAbsent
  else
    if bullSeen and bullSeen['#noWait'] then bullAbsent[KEYS[1]] = true end
    ${probes}
  end
end
${quietLock(quietExists(quietAttempts(quietRemove(quietStart(completeBody.replace(DRAINED_CHECK, '-- (the drained check: bull-quiet.ts)')))), direct ? 'bullJobRead or ' : ''))}`;
}
