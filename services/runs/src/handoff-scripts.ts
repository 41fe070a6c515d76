/**
 * Direct hand-off (one server only): a worker blocked idle on its queue registers itself, and the
 * submit that adds a job runs that worker's fetch in the add's own script — BullMQ's fetch
 * (moveToActive-11, with the worker's token and lock), the look behind it, the run's lease and
 * attempt start (`fetchLeaseBeginScript`, the fused fetch's very text) — and pushes the fetch's
 * answer to the worker's hand-off key, which its blocking pop watches beside the queue's marker.
 * The pick-up then costs no fetch: no round trip, no fsync'd write of its own.
 *
 * Keys (all in the queue's hash slot): `<queue>idle` (sorted set: worker id → registration's expiry,
 * ms), `<queue>idle:args` (hash: worker id → its fetch's terms, JSON), `<queue>handoff:<worker id>`
 * (sorted set: the answers handed to that worker, at most one). A registration is used once (the
 * hand-off removes it), and never outlives the worker's wake-up: a pop that brought no hand-off (the
 * marker, the timeout) is followed, before the worker fetches, by `TAKE_BACK` (idle-scripts.ts), which removes it and
 * takes a job handed after the pop was served, so a worker woken by the marker while a job was
 * handed to it loses nothing. A pop that brought one needs none (the hand-off removed it).
 */
import { LuaScript } from '@islet/core/lua-script';
import { bullQuietPrelude, quietAdd, quietFetch } from './bull-quiet.ts';
import { BULL_START_JOB } from './bull-start.ts';
import { handedAdd } from './handed-add.ts';
import { handedFetch } from './handed-fetch.ts';
import { LIVE_CHECK } from './handoff-live.ts';
import { compactTermsBranch } from './handoff-terms.ts';
import { fetchLeaseBeginScript } from './lease-scripts.ts';

/** The hand-off's keys of a queue (`queuePrefix`: BullMQ's `keys['']`, e.g. `islet:{runs-x}:`). */
export function handOffKeys(queuePrefix: string, workerId: string) {
  return {
    idle: `${queuePrefix}idle`,
    idleArgs: `${queuePrefix}idle:args`,
    handOff: `${queuePrefix}handoff:${workerId}`,
    /** Set by the worker's close: a registration of it arriving later is refused. */
    closed: `${queuePrefix}handoff:${workerId}:closed`,
  };
}

/** What a registration holds: the worker's fetch as BullMQ would send it, and where to answer. */
export interface IdleTerms {
  /** moveToActive-11's keys. */
  keys: string[];
  /** BullMQ's key prefix (moveToActive's ARGV[1]). */
  prefix: string;
  /** The lock token the handed job will carry. */
  token: string;
  lockDuration: number;
  /** The worker's name (BullMQ's opts.name), '' for none. */
  name: string;
  /** `fetch-lease-begin-11`'s arguments after BullMQ's (`fetchedStartArgs`); its last one, the time, is replaced by the hand-off's. */
  startArgs: (string | number)[];
  /** The worker's hand-off key. */
  handOff: string;
}

/**
 * BullMQ's fetch, then (when it took a job) the look behind it: answer element 6 is 1 when the
 * queue is drained (its stale ready marker dropped), 0 when not (the marker stays for other
 * workers; `knownEmpty`: a Lua expression that, true, says so without asking). Element 5 is the run's start, set by `fetch-lease-begin-11` (nil for a skill's job).
 * Keys are moveToActive-11's: 1 wait, 3 prioritized, 7 delayed, 11 marker. BullMQ's text runs
 * through bull-quiet.ts' `bullCall`; `ownPrelude` false: the enclosing script defines it (an add
 * and a fetch in one script share what it knows). `direct`: a Lua expression answering the fetch
 * without BullMQ's text, or nil to have the text run (the hand-off's: handed-fetch.ts).
 */
export function fetchAndLook(
  moveToActiveBody: string,
  ownPrelude = true,
  knownEmpty?: string,
  direct?: string,
): string {
  // BullMQ's fetch starts its job by the prelude's `bullStartJob`, made here, inside the function
  // that runs the text: a script whose fetch is answered without it (the hand-off's direct fetch;
  // a submit with no worker idle) makes none (round 48 `submit-closures`).
  const fetchText = quietFetch(moveToActiveBody);
  const startJob = fetchText.includes('bullStartJob(') ? `${BULL_START_JOB}\n` : '';
  const made = `local function bullFetch()
${startJob}${fetchText}
end`;
  // A direct fetch's answer first, BullMQ's text made only when it answers none: a function made
  // at every call whether called or not, and this one reads ~10 enclosing locals (round 52 `submit-lean`).
  const body = `${
    direct
      ? `local fetched = ${direct}
if not fetched then
${made}
fetched = bullFetch()
end`
      : `${made}
local fetched = bullFetch()`
  }
if type(fetched[1]) == 'table' then
  local drained = 0
  -- Empty lists and sets do not exist: one EXISTS answers for the three.
  if ${knownEmpty ? `${knownEmpty} or ` : ''}bullRaw('EXISTS', KEYS[1], KEYS[3], KEYS[7]) == 0 then
    bullCall('ZREM', KEYS[11], '0')
    drained = 1
  end
  fetched[5] = false
  fetched[6] = drained
end
return fetched`;
  // The prelude's helpers this text never calls are left out (bullQuietPrelude).
  return ownPrelude ? `${bullQuietPrelude(body)}\n${body}` : body;
}

/**
 * Where the hand-off's attempt start names a record created earlier in the same script: `nil` in
 * the add alone; a submit's admission carried in the add (admitted-add.ts) puts its created record
 * there (includes/begin-attempt.lua's `known`).
 */
export const CREATED_RUN = '(nil --[[islet:created-run]])';

/**
 * Where the hand-off's add takes a submit's count of its job in the pool's queued counts: `nil` in
 * the add alone; a submit's admission carried in the add (admitted-add.ts) puts {queued key,
 * tenant} there instead of counting the job itself, and the add counts it, unless the fetch it runs
 * for an idle worker takes that very job: its lease would take the count off again in the same
 * script (`HINCRBY +1`, then `HDEL` or `HINCRBY -1`), so neither write goes.
 */
export const QUEUED_COUNT = '(nil --[[islet:queued-count]])';

/**
 * Where the hand-off's fetch takes a job data text it need not decode, and its tenant: `nil` in the
 * add alone; a submit's admission carried in the add (admitted-add.ts) puts there the add's data
 * text (its ARGV[2]) and the admitted tenant when its caller vouched that text is the run's
 * format-2 data of that tenant (lua/fetch-lease-begin-11.lua's KNOWN_JOB, KNOWN_TENANT).
 */
export const ADMITTED_DATA = '(nil --[[islet:admitted-data]])';
export const ADMITTED_TENANT = '(nil --[[islet:admitted-tenant]])';

/** addStandardJob-9's check for a job of the same id (a job added with its own id: every run's), BullMQ 5. */
const JOB_EXISTS = 'if rcall("EXISTS", jobIdKey) == 1 then';
/**
 * The same check in one EXISTS with the wait list and the idle, delayed and prioritized sets: the
 * job's key counted sixteen times, the wait list's eight, the idle set's four, the delayed set's
 * twice, so each key's bit reads off the answer (16 or more: the job exists). A wait list found
 * absent, with a worker registered idle, lets the add hold its job's push (`HELD_PUSH`). An add
 * that found the idle set absent pops nothing from it (ZPOPMAX of an absent key: an empty answer,
 * the script then returns the add's); delayed and prioritized
 * sets found absent are taken as absent by the hand-off's fetch (its promotion of due delayed jobs
 * reads nothing, and the look behind the job is answered: `SOLE_JOB`) through the prelude's
 * `bullAbsent`, until a command that could create one goes.
 */
const JOB_AND_IDLE = 'if jobOrIdle(jobIdKey) == 1 then -- (handoff-scripts.ts)';

/**
 * The add's `LPUSH wait <job>` held back (`heldPush`) when its check found the wait list absent and a
 * worker registered idle (the new job would be the list's only one), and the hand-off's fetch's
 * `RPOPLPUSH wait active` answered with it as one `LPUSH active <job>`: the lists end as the two
 * commands leave them (the wait list absent again, the job at the head of active), one command
 * and the wait list's making and removal fewer. Any other command on the wait list writes the push
 * first (`pushHeld`), and so does every way out but the hand-off (`marked`): no reader outside the
 * script sees the queue without it. BullMQ 5 blocks no client on the wait list (its workers block
 * on the marker), so no one is woken by the push either way.
 */
const HELD_PUSH = `    if cmd == 'LPUSH' and idleSeen and waitAbsent and newJob and not heldPush and select('#', ...) == 1 then
      heldPush = ...
      soleWait = true
      return 1
    end
    if heldPush then
      if cmd == 'RPOPLPUSH' and select('#', ...) == 1 then
        local id = heldPush
        heldPush = nil
        bullCall('LPUSH', (...), id)
        return id
      end
      pushHeld()
    end`;

/**
 * The base marker's `ZADD marker 0 0` (BullMQ's add's, then its fetch's: the add's marker is its
 * KEYS[9], the fetch's the same key) held back once the add's check found a worker registered idle:
 * a job handed over that drains the queue has the marker removed again by the look behind it
 * (`fetchAndLook`'s ZREM), so ZADD then ZREM is that ZREM alone. Every other way out (no live
 * registration, no job fetched, a job left behind it, an error in the fetch) sets it (`marked`),
 * still inside the script: no reader sees the queue without it. BullMQ's fetch reads no marker.
 */
const HELD_MARKER = `local markerKey, held, soleWait = AK[9], false, false
local heldPush
local function pushHeld()
  if heldPush then
    local id = heldPush
    heldPush = nil
    bullCall('LPUSH', AK[1], id)
  end
end
local bullRedis = setmetatable({call = function(cmd, key, ...)
  if key == newJob then
    local text = jobWritten(cmd, key, ...)
    if text then return bullCall(cmd, key, unpack(text)) end
  end
  if idleSeen and key == markerKey and cmd == 'ZADD' and select('#', ...) == 2
    and tostring((...)) == '0' and tostring(select(2, ...)) == '0' then
    held = true
    return 1
  end
  if key == AK[1] then
${HELD_PUSH}
    if cmd == 'LPUSH' then
      local n = bullCall(cmd, key, ...)
      soleWait = n == 1
      return n
    end
  end
  return bullCall(cmd, key, ...)
end}, {__index = bullRedis})
local queuedCount, uncounted = ${QUEUED_COUNT}, nil
-- The admission's count of the job, unless the lease of the fetch below decided on it uncounted.
local function countHeld()
  if queuedCount and not (uncounted and uncounted.decided) then
    redis.pcall('HINCRBY', queuedCount[1], queuedCount[2], 1)
  end
  queuedCount = nil
end`;

/**
 * Every way out of the hand-off but a hand-off of the job: what the add held back is written, still
 * inside the script. Made past the add's answer with no worker idle (which returns before any way
 * out needs it), as the hand-off's `unpropagated` (UNPROPAGATED): a function made at every call is
 * made whether called or not (round 52 `submit-lean`).
 */
const MARKED = `local function marked(answer)
  pushHeld()
  if held then bullCall('ZADD', markerKey, 0, '0') end
  countHeld()
  return answer
end`;

/** The hand-off's own bookkeeping: not propagated (see handOffAddScript). */
const UNPROPAGATED = `local function unpropagated(...)
  redis.set_repl(redis.REPL_NONE)
  local r = redis.call(...)
  redis.set_repl(redis.REPL_ALL)
  return r
end`;

/**
 * A new job's hash as the add's HMSET writes it (the add's check found no job of its id), noted in
 * the prelude's `bullQ.known` for the hand-off's fetch: when it takes that very job, its start
 * (bull-quiet.ts `bullStartJob`) reads the fields from there instead of by HGETALL. Any other
 * command of BullMQ's texts on the job's key forgets them; none runs there between the two
 * (Islet's own commands never name a job's key). A number is noted as Redis stores it (`%.17g`); an
 * argument of another type, or an odd count, notes nothing.
 */
const NEW_JOB = `local jobNoted = false
local function jobWritten(cmd, key, ...)
  bullQ.known = nil
  local n = select('#', ...)
  -- The first write only (BullMQ 5's add writes the hash once): any later command forgets it.
  if jobNoted or cmd ~= 'HMSET' or n % 2 ~= 0 then
    jobNoted = true
    return
  end
  jobNoted = true
  local flat, whole = {...}, true
  for i = 1, n do
    local v = flat[i]
    if type(v) == 'number' then
      if v ~= math.floor(v) or math.abs(v) >= 2 ^ 52 then whole = false end
      -- A zero (the delay, the priority) without the printer: a positive zero prints as '0'.
      if v == 0 and 1 / v > 0 then flat[i] = '0' else flat[i] = string.format('%.17g', v) end
    elseif type(v) ~= 'string' then return end
  end
  bullQ.known = {key, flat}
  -- The same text to Redis when every number is whole: it prints a number argument as %.17g too, with
  -- libc's float printer (~2-4 K instructions each: the timestamp, delay and priority), so printing
  -- it here once saves that (test/bench/README.md, round 35, \`submit-lua\`).
  if whole then return flat end
end`;

/**
 * The look behind a handed job answered without its EXISTS (in the fetch's scope: its KEYS): the
 * add's LPUSH made the job the wait list's only one (answered 1), the fetch took a job, so from
 * there (moveToActive takes the wait list's before the prioritized set's), and the add's EXISTS
 * found the prioritized and delayed sets absent with nothing since that could create them.
 */
const SOLE_JOB = '(soleWait and KEYS[1] == AK[1] and bullAbsent[KEYS[3]] and bullAbsent[KEYS[7]])';

/** moveToActive-11's read of the worker's options (its ARGV[3], packed), as BullMQ 5 writes it. */
const FETCH_OPTS_READ = 'local opts = cmsgpack.unpack(ARGV[3])';
/** The hand-off's fetch reads them from the table the script made them in (`opts`, above `fetchFor`). */
const FETCH_OPTS = "local opts = opts -- the worker's options as made by the hand-off (handoff-scripts.ts)";

/**
 * BullMQ's add (`addBody`, addStandardJob-9 as BullMQ sends it) and, when a worker of the queue is
 * registered idle, that worker's fused fetch (`fetchAndLook` of `moveToActiveBody`, moveToActive-11;
 * both of BullMQ's texts through bull-quiet.ts, sharing what it knows) run
 * for it, its answer pushed to the worker's hand-off key (cmsgpack of {token, answer}). KEYS: the
 * add's, then the queue's prioritized set, idle and idle args; ARGV the add's. Returns the add's answer,
 * or when it handed the job over {the add's answer, the worker's hand-off key, the token}. A fetch that found no
 * job (the queue paused, rate limited, the job delayed) leaves the registration as it was; a lease
 * refused is handed over as the fused fetch answers it (the worker defers the job). The latest
 * expiry decides: when it is live, that registration is used and expired ones below it (skipped,
 * never chosen) stay until an add finds the latest expired too, which drops them all (the idle set
 * and its terms hold registrations only, paired: every script removes both); read on every add
 * with a live registration, such a scan was most of the hand-off's bookkeeping. With `liveCheck`,
 * a registration whose worker's runner is gone is dropped and the next looked at (handoff-live.ts). The latest is
 * popped (`ZPOPMAX`: read and removed in one command) and put back, its score unchanged, only when
 * its fetch found no job; the script is atomic, so no reader sees it out in between.
 *
 * What the script writes to the idle set, its terms and the worker's hand-off key is not propagated
 * (`unpropagated`: not in the AOF, not sent to replicas). The registration it removes was never
 * propagated (`REGISTER_IDLE`), and the worker's blocking pop takes the answer in the same event
 * loop turn as the script (Redis serves a client blocked on a key the script wrote before the turn's
 * AOF write and fsync), so the AOF and a replica held the answer (~1.4 KB: the job's fields and the
 * created record, both also in the propagated HMSET and HSET) only from the script to the pop's
 * ZPOPMIN right after it. Only an answer waiting on the key (its worker between a pop that brought
 * none and its `TAKE_BACK`, or dead) can be lost by a restart or a failover: its job stays active
 * with its lock and lease, and BullMQ's stalled check gives it back as for a worker that died
 * (test/bench/README.md, round 32 `redis-aof`).
 */
export function handOffAddScript(addBody: string, moveToActiveBody: string, liveCheck = false): LuaScript {
  // The fused fetch's lease takes the time read below (`now`) rather than reading it again; its
  // attempt start, a record created earlier in the same script (CREATED_RUN).
  // The job the add held back is fetched without BullMQ's text where it is the text handed-fetch.ts knows.
  const direct = handedFetch(moveToActiveBody);
  const fused = fetchLeaseBeginScript(
    fetchAndLook(moveToActiveBody, false, SOLE_JOB, direct ? 'handedFetch(KEYS, ARGV)' : undefined),
    'now',
    false,
    CREATED_RUN,
    'uncounted',
    ADMITTED_DATA,
    ADMITTED_TENANT,
  ).source;
  // The worker's options go to its fetch as the table they are made as (FETCH_OPTS), not packed
  // here for BullMQ's text to unpack again: ~14 K of the submit's ~1.1 M instructions a call
  // (test/bench/README.md, round 34, `seq-path`). Taken only where the fetch reads them once.
  const fetchBody =
    fused.split(FETCH_OPTS_READ).length === 2 ? fused.replace(FETCH_OPTS_READ, FETCH_OPTS) : fused;
  const fetchArgs = fetchBody === fused ? 'cmsgpack.pack(opts)' : "''";
  // The add's check for a job of the same id asks about the idle set too (JOB_EXISTS).
  const body = addBody.split(JOB_EXISTS).length === 2 ? addBody.replace(JOB_EXISTS, JOB_AND_IDLE) : addBody;
  // A plain job is added without BullMQ's text where it is the text handed-add.ts knows (and the
  // hand-off's EXISTS is in it: \`jobOrIdle\`).
  const directAdd = body !== addBody ? handedAdd(addBody) : undefined;
  const script = `local prioritizedKey, idleKey, idleArgsKey = KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS]
local AK = {unpack(KEYS, 1, #KEYS - 3)}
local idleSeen, newJob, waitAbsent
local delayedKey = AK[6]
local jobAsked, jobThere
local function jobOrIdle(jobKey)
  -- Asked already (the direct add, handed-add.ts, found the job there and left it to BullMQ's text,
  -- nothing written since): the same answer, not asked again.
  if jobAsked == jobKey then return jobThere end
  local j, w, i, d = jobKey, AK[1], idleKey, delayedKey
  local n = redis.call('EXISTS', j, j, j, j, j, j, j, j, j, j, j, j, j, j, j, j,
    w, w, w, w, w, w, w, w, i, i, i, i, d, d, prioritizedKey)
  idleSeen = n % 8 >= 4
  waitAbsent = n % 16 < 8
  if n < 16 then newJob = jobKey end
  -- Absent sets are answered by the hand-off's fetch without asking (bull-quiet.ts' bullAbsent).
  if n % 4 < 2 then bullAbsent[delayedKey] = true end
  if n % 2 == 0 then bullAbsent[prioritizedKey] = true end
  jobAsked, jobThere = jobKey, n >= 16 and 1 or 0
  return jobThere
end
${NEW_JOB}
${HELD_MARKER}
${directAdd ?? ''}
local function add(KEYS, ARGV)
${quietAdd(body, directAdd ? 'local handed = handedAdd(KEYS, ARGV)\nif handed ~= nil then return handed end' : '')}
end
local added = add(AK, ARGV)
-- The fetch below takes this very job only from a held push (the wait list's only one): else the
-- job is counted now, as the admission would have before the add.
-- (\`decided\` made with it: the acquire's setting of it then grows no table.)
if heldPush then uncounted = {job = added, decided = false} else countHeld() end
if idleSeen == false then return added end
${UNPROPAGATED}
${MARKED}
local top = unpropagated('ZPOPMAX', idleKey)
if not top[1] then return marked(added) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(top[2]) <= now then
  unpropagated('DEL', idleKey, idleArgsKey)
  return marked(added)
end
local worker = top[1]${liveCheck ? `\n${LIVE_CHECK}` : ''}
local ok, terms = pcall(cjson.decode, redis.call('HGET', idleArgsKey, worker) or '')
if ok and type(terms) ~= 'table' then ok = false end
-- The time as text once (Redis's TIME: whole ms): BullMQ's processedOn and the record's updatedAt are
-- written with it as they would print the number.
local nowText = string.format('%d', now)
local token, fetchKeys, handOff, opts, FA
-- The full form (an object), or the compact one (an array: handoff-terms.ts) when this script holds its names.
if ok and terms.keys then
  token, fetchKeys, handOff = terms.token, terms.keys, terms.handOff
  opts = {token = token, lockDuration = tonumber(terms.lockDuration)}
  if terms.name ~= '' then opts.name = terms.name end
  -- The start's arguments copied by unpack (C, the table made at its size), not one by one.
  FA = {terms.prefix, nowText, ${fetchArgs}, unpack(terms.startArgs)}
  FA[#FA] = nowText
${compactTermsBranch(fetchArgs)}
else
  unpropagated('HDEL', idleArgsKey, worker)
  return marked(added)
end
${direct ?? ''}
local function fetchFor(KEYS, ARGV)
${fetchBody}
end
local fine, answer = pcall(fetchFor, fetchKeys, FA)
if not fine then
  marked(added)
  error(answer)
end
if type(answer[1]) ~= 'table' then
  unpropagated('ZADD', idleKey, top[2], worker)
  return marked(added)
end
unpropagated('HDEL', idleArgsKey, worker)
-- The answer before the marker: Redis serves a client blocked on several keys from the key signalled
-- ready first, so the worker, blocked on its key and the marker, takes its answer in this turn, not
-- the marker and then the answer by its TAKE_BACK round trip (test/bench/README.md round 47 \`handoff-order\`).
unpropagated('ZADD', handOff, '0', cmsgpack.pack({token, answer}))
-- Drained: the look behind the job removed the base marker (ZREM), which the held ZADD would have set first.
if answer[6] ~= 1 then
  marked()
else
  pushHeld()
  countHeld()
end
-- Handed: where and under which token, for the gateway's watch on a worker that never takes it
-- (idle-scripts.ts reclaimHandedScript); the gateway answers BullMQ with \`added\` alone.
return {added, handOff, token}`;
  // The prelude's helpers the add and its fetch never call are left out (bullQuietPrelude).
  return new LuaScript(`${bullQuietPrelude(script)}\n${script}`);
}
