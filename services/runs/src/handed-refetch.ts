/**
 * The fused end's second fetch (a next job whose lease the end refused is moved to delayed, and
 * the one after it fetched: lease-scripts.ts `endCompleteStartScript`'s refetch, two tenants' path)
 * without running BullMQ's moveToActive-11 text for it: the commands that text sends through
 * bull-quiet.ts with a prelude of its own (nothing known absent: every read goes to Redis), and the
 * look behind a job that `fetchAndLook` (handoff-scripts.ts) adds, sent directly in their order.
 * The text there cost Redis ~190 K instructions a refetch, most of it the prelude, the text's
 * functions made and its interpretation (test/bench/README.md, round 36, `end-more`).
 *
 * Taken when the worker's options have a lock token (not '0'), no limiter, and a name absent or a
 * text (a baked end's parts, `known`, checked so by the runner); else the text runs. Then, as the text through bull-quiet: the meta's HMGET (and LLEN
 * active under a concurrency cap), promoteDelayedJobs (`ZRANGEBYSCORE delayed 0 <bound> LIMIT 0
 * 1000`; for jobs due `ZREM`, each job's `HGET priority`, `LPUSH` onto wait or paused or, with a
 * priority, `INCR pc` and `ZADD prioritized`, `HSET delay 0`; the base marker unless paused or
 * capped), the rate limit's GET and PTTL (DEL at 0), `RPOPLPUSH wait active` (a BullMQ 4 marker:
 * LREM and a second RPOPLPUSH), else `ZPOPMIN prioritized` with `LPUSH active` or `DEL pc`, else
 * `ZRANGE delayed 0 0 WITHSCORES` for the next delayed time; a job: the limiter's INCR (PEXPIRE at
 * 1), the lock's SET, the base marker (answered by bull-quiet when a promotion set it), the job's
 * start as bull-start.ts's lean form makes it, then `EXISTS wait prioritized delayed` and, all
 * absent, `ZREM marker 0` (drained). Events are not written (bull-quiet.ts). Answers as
 * `fetchAndLook`. Written against BullMQ 5.81.5's moveToActive-11 (`MOVE_TO_ACTIVE_SHA1`); another
 * text gets no such path.
 */
import { createHash } from 'node:crypto';
import { promoteDelayedJobs } from './bull-promote.ts';
import { leanStartJob } from './bull-start.ts';
import { knownFetchOptions, MOVE_TO_ACTIVE_SHA1 } from './handed-fetch.ts';

/**
 * `local function handedRefetch(KEYS, ARGV, known)` (moveToActive-11's): `fetchAndLook`'s answer, or
 * nil for the text to run. `known` (nil, or a baked end's `{token, lockDuration, name, …}`):
 * the worker's options as their parts, ARGV[3] not read (it is then `false`).
 */
const HANDED_REFETCH = `local function handedRefetch(KEYS, ARGV, known)
  local token, name, lockDuration
  if known then
    -- A baked end's parts of the worker's options, checked by the runner (end-options.ts): no
    -- unpack, and the lock duration the text Redis would print for its number (round 52 \`fetch-token\`).
    token, lockDuration, name = known[1], known[2], known[3]
  else
    local opts = cmsgpack.unpack(ARGV[3])
    token, name, lockDuration = opts['token'], opts['name'], opts['lockDuration']
    if opts['limiter'] ~= nil or type(token) ~= 'string' or token == '0'
      or (name ~= nil and type(name) ~= 'string') then
      return nil
    end
  end
  local call, prefix, now = redis.call, ARGV[1], ARGV[2]
  -- getTargetQueueList
  local meta = call('HMGET', KEYS[9], 'paused', 'concurrency', 'max', 'duration')
  local maxed = meta[1] and true or false
  if not maxed and meta[2] then maxed = call('LLEN', KEYS[2]) >= tonumber(meta[2]) end
  -- promoteDelayedJobs (the numbers as the text Redis prints for them; the bound the same Lua number)
  local pushed, prioritized, marked = false, false, false
  ${promoteDelayedJobs({ now: 'now', prefix: 'prefix', marker: 'KEYS[11]' })}
  -- getRateLimitTTL
  local maxJobs = tonumber(meta[3])
  if maxJobs and maxJobs <= tonumber(call('GET', KEYS[6]) or 0) then
    local pttl = call('PTTL', KEYS[6])
    if pttl == 0 then call('DEL', KEYS[6]) end
    if pttl > 0 then return {0, 0, pttl, 0} end
  end
  if maxed then return {0, 0, 0, 0} end
  local jobId = call('RPOPLPUSH', KEYS[1], KEYS[2])
  if jobId and string.sub(jobId, 1, 2) == '0:' then
    call('LREM', KEYS[2], 1, jobId)
    jobId = call('RPOPLPUSH', KEYS[1], KEYS[2])
  end
  if not jobId then
    -- moveJobFromPrioritizedToActive
    local popped = call('ZPOPMIN', KEYS[3])
    if #popped > 0 then
      call('LPUSH', KEYS[2], popped[1])
      jobId = popped[1]
    else
      call('DEL', KEYS[10])
      -- getNextDelayedTimestamp
      local first = tonumber(call('ZRANGE', KEYS[7], '0', '0', 'WITHSCORES')[2])
      if first ~= nil then return {0, 0, 0, first / 0x1000} end
      return {0, 0, 0, 0}
    end
  end
  -- prepareJobForProcessing, as bull-quiet makes it
  local jobKey = prefix .. jobId
  if maxJobs and tonumber(call('INCR', KEYS[6])) == 1 then
    call('PEXPIRE', KEYS[6], math.floor(math.abs(meta[4])))
  end
  call('SET', jobKey .. ':lock', token, 'PX', lockDuration)
  if not marked then call('ZADD', KEYS[11], '0', '0') end
  local function start(jobKey, processedOn, pb)
    local job = call('HGETALL', jobKey)
    ${leanStartJob('call')}
  end
  local fetched = {start(jobKey, now, name), jobId, 0, 0}
  -- fetchAndLook's look behind the job: empty lists and sets do not exist.
  local drained = 0
  if call('EXISTS', KEYS[1], KEYS[3], KEYS[7]) == 0 then
    call('ZREM', KEYS[11], '0')
    drained = 1
  end
  fetched[5] = false
  fetched[6] = drained
  return fetched
end`;

/** The end's direct refetch for `moveToActiveBody`, or undefined when that is not the text it was written against. */
export function handedRefetch(moveToActiveBody: string): string | undefined {
  const sha1 = createHash('sha1').update(moveToActiveBody).digest('hex');
  return sha1 === MOVE_TO_ACTIVE_SHA1 ? HANDED_REFETCH : undefined;
}

/** Where a fused fetch's text (`fetchLeaseBeginScript`) begins its fetch. */
const FETCH_JOB = 'local function fetchJob()\n';

/**
 * A fused fetch's text (`source`: `fetchLeaseBeginScript` of `fetchAndLook(moveToActiveBody)`,
 * FETCH_TAKE_BACK before it or not) for a baked fetch whose worker's options are `known` (a Lua
 * expression, `{token, lockDuration, name, …}`: handed-fetch.ts `knownFetchOptions`), with its
 * fetch answered by this direct refetch first (the same function the end's refetch runs, the same
 * body it stands for: handed-refetch.test.ts) and BullMQ's text only where it declines; the text,
 * where it runs, reads the options from `known` too. Round 36 `end-more` left this (its "Found,
 * left" 5: ~190 K a fetch); round 52 `fetch-token`. Undefined: the options are not read as
 * BullMQ 5 does. Not BullMQ 5.81.5's text: the options from `known`, the text as before.
 */
export function knownFetchSource(
  source: string,
  moveToActiveBody: string,
  known: string,
): string | undefined {
  const body = knownFetchOptions(source, known);
  if (!body) return undefined;
  const direct = handedRefetch(moveToActiveBody);
  if (!direct || body.split(FETCH_JOB).length !== 2) return body;
  return body.replace(
    FETCH_JOB,
    `${direct}\n${FETCH_JOB}local handed = handedRefetch(KEYS, ARGV, ${known})\nif handed then return handed end\n`,
  );
}
