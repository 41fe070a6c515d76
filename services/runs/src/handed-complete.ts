/**
 * A run's completion on the end's path without running BullMQ's moveToFinished-14 text for it:
 * the commands that text sends (through bull-quiet.ts's `quietComplete`) on that one path, sent
 * directly, in its order. The text makes ~45 functions at every call and bull-quiet's prelude and
 * roles are set up before it does anything (~80 K of the completion's ~221 K Redis instructions an
 * end, ~150 K of it the text interpreted: test/bench/README.md, round 35, `end-lua`).
 *
 * Taken only where every fact the text would read on its way is known, else the text runs:
 * - a completion (`completed`), no `fieldsToUpdate`, the completed set not trimmed by this call
 *   (its time not a multiple of 64: bull-quiet leaves the trim's reads unsent on the others);
 * - the end's EXISTS (`quietCompleteAsk`, noted in `seen`) found the job's `:dependencies` and
 *   `:unsuccessful`, the prioritized and delayed sets and the priority counter absent (`#absent`:
 *   no parent's deps to check, no delayed job to promote, no prioritized job to take), and whether
 *   the wait list is there (`#noWait`);
 * - the worker's options: a lock token (not '0'), no limiter, a name absent or a text, no metrics (`maxMetricsSize` ''),
 *   `keepJobs` a table whose `count` is not 0 (0: the job removed) and whose `age`, if any, a number;
 * - the job's hash (its HMGET, the text's first command: `quietExists`) has a `timestamp` (it
 *   exists), no `parentKey`, `parent` or dedup id, and an `atm` absent or a whole number below 2^52.
 *   Refused after that read, the text runs with the read handed to it (`bullJobRead`), not sent again.
 * Then, as the text: GETDEL of the lock (another's token put back with the lock duration: -6; none:
 * -2), `LREM active "-1" id` (-3 when not there), `ZADD completed <ts> id`, `HSET job <returnvalue>
 * finishedOn <ts> atm <n>`, and with fetchNext the queue's meta (paused: {0,0,0,0}; a concurrency
 * cap: LLEN active; a rate limit `max`: its counter's GET and PTTL, as getRateLimitTTL); with the
 * wait list there, its next job: RPOPLPUSH, the limiter's INCR (PEXPIRE at 1), the lock's SET, the
 * base marker's ZADD and the job's start as bull-start.ts's lean form makes it (one HGETALL, one HSET:
 * `leanStartJob`'s text, as this runs before the prelude), or a BullMQ 4 marker's LREM. Answers as the text.
 * Another text (another BullMQ) gets no such path (`handedComplete` undefined).
 */
import { createHash } from 'node:crypto';
import { promoteDelayedJobs } from './bull-promote.ts';
import { leanStartJob } from './bull-start.ts';

/** SHA1 of the moveToFinished-14 text `HANDED_COMPLETE` was written against (BullMQ 5.81.5). */
export const MOVE_TO_FINISHED_SHA1 = '11d69c87800ed307165e6eeba9c2e94d9fb95fcd';

/** One completion in this many trims the completed set (bull-quiet.ts `TRIM_EVERY`). */
const TRIM_EVERY = 64;

/**
 * `local function handedComplete(KEYS, ARGV, seen, known)` (moveToFinished-14's keys and arguments,
 * `quietCompleteAsk`'s table and, from a baked end, the runner's verdict on the packed options:
 * `{token, lockDuration, name}`, nil for the unpack of ARGV[8]): answers `read, answer` — `answer` the text's answer, or nil for the
 * text to run, `read` the job's HMGET when it was sent (the text takes it as its own).
 */
const HANDED_COMPLETE = `local function handedComplete(KEYS, ARGV, seen, known)
  local ts = tonumber(ARGV[2])
  local absent = seen and seen['#absent']
  if ARGV[5] ~= 'completed' or absent == nil or not ts
    or ts % ${TRIM_EVERY} == 0 or (ARGV[9] or '') ~= '' then
    return nil
  end
  local token, lockDuration, name
  if known then
    -- The runner's verdict on the worker's packed options (end-options.ts): its token, lock
    -- duration and name, the options' checks below passed there; no unpack.
    token, lockDuration, name = known[1], known[2], known[3]
  else
    local opts = cmsgpack.unpack(ARGV[8])
    local keep = opts['keepJobs']
    token, lockDuration, name = opts['token'], opts['lockDuration'], opts['name']
    if type(token) ~= 'string' or token == '0' or opts['limiter'] ~= nil or opts['maxMetricsSize'] ~= ''
      or type(keep) ~= 'table' or (name ~= nil and type(name) ~= 'string') then
      return nil
    end
    local count, age = keep['count'], keep['age']
    if (count ~= nil and (type(count) ~= 'number' or count == 0)) or (age ~= nil and type(age) ~= 'number') then
      return nil
    end
  end
  local call, jobKey, jobId = redis.call, KEYS[12], ARGV[1]
  -- The end's EXISTS found one of its keys there (a queue holding deferrals: the delayed set, the
  -- pool's waiting list): quietComplete's second probe, as it sends it; one there, the text runs
  -- (told the probe went: probed false).
  local probed
  if not absent then
    probed = call('EXISTS', jobKey .. ':dependencies', jobKey .. ':unsuccessful', KEYS[3], KEYS[10]) == 0
    if not probed then return nil, nil, false end
  end
  local job = call('HMGET', jobKey, 'parentKey', 'parent', 'deid', 'atm', 'timestamp')
  if job[1] or job[2] or job[3] or not job[5] then return job, nil, probed end
  local made, atm = '1', job[4]
  if atm then
    local n = tonumber(atm)
    if not (n and n == math.floor(n) and n >= 0 and n < 2 ^ 52) then return job, nil, probed end
    made = n + 1
  end
  -- removeLock as bull-quiet's GETDEL makes it
  local lockKey = jobKey .. ':lock'
  local held = call('GETDEL', lockKey)
  if held ~= token then
    if not held then return job, -2 end
    call('SET', lockKey, held, 'PX', tonumber(lockDuration) or 30000)
    return job, -6
  end
  if call('LREM', KEYS[2], '-1', jobId) < 1 then return job, -3 end
  call('ZADD', KEYS[11], ARGV[2], jobId)
  call('HSET', jobKey, ARGV[3], ARGV[4], 'finishedOn', ARGV[2], 'atm', made)
  if ARGV[6] ~= '1' then return job, 0 end
  -- fetchNextJob (getTargetQueueList, promoteDelayedJobs, getRateLimitTTL)
  local meta = call('HMGET', KEYS[9], 'paused', 'concurrency', 'max', 'duration')
  local maxed = meta[1] and true or false
  if not maxed and meta[2] then maxed = call('LLEN', KEYS[2]) >= tonumber(meta[2]) end
  -- Promoted here: jobs pushed onto the target list, the prioritized set (and its counter) made,
  -- the base marker set (the job start's then answered by bull-quiet, not sent).
  local pushed, prioritized, marked = false, false, false
  if not absent then
    -- promoteDelayedJobs: the delayed set asked (the numbers as the text Redis prints for them).
    ${promoteDelayedJobs({ now: 'ts', prefix: 'ARGV[7]', marker: 'KEYS[14]' })}
  end
  local maxJobs = tonumber(meta[3])
  if maxJobs and maxJobs <= tonumber(call('GET', KEYS[6]) or 0) then
    local pttl = call('PTTL', KEYS[6])
    if pttl == 0 then call('DEL', KEYS[6]) end
    if pttl > 0 then return job, {0, 0, pttl, 0} end
  end
  if maxed then return job, {0, 0, 0, 0} end
  -- The next job: the wait list's (absent: answered nil, unless a promotion pushed onto it), a
  -- BullMQ 4 marker's (0:..., removed; '0:0' a prioritized job), else the prioritized set's
  -- (absent unless a promotion made it: ZPOPMIN answered {}, DEL of its counter 0).
  local nextId
  if pushed or not seen['#noWait'] then nextId = call('RPOPLPUSH', KEYS[1], KEYS[2]) end
  local old = nextId and string.sub(nextId, 1, 2) == '0:'
  if old then call('LREM', KEYS[2], 1, nextId) end
  if not nextId or nextId == '0:0' then
    local popped = prioritized and call('ZPOPMIN', KEYS[3])
    if popped and #popped > 0 then
      call('LPUSH', KEYS[2], popped[1])
      nextId, old = popped[1], false
    else
      if prioritized then call('DEL', KEYS[10]) end
      -- '0:0' with no prioritized job: the text fails on it (its prepareJobForProcessing's first line).
      if nextId == '0:0' then
        local keyPrefix, jobId = ARGV[7], nil
        return job, keyPrefix .. jobId
      end
    end
  end
  if not nextId or old then
    -- getNextDelayedTimestamp (the delayed set absent: answered {})
    if absent then return job, 0 end
    local first = tonumber(call('ZRANGE', KEYS[7], '0', '0', 'WITHSCORES')[2])
    if first ~= nil then return job, {0, 0, 0, first / 0x1000} end
    return job, 0
  end
  local nextKey = ARGV[7] .. nextId
  if maxJobs and tonumber(call('INCR', KEYS[6])) == 1 then
    call('PEXPIRE', KEYS[6], math.floor(math.abs(meta[4])))
  end
  call('SET', nextKey .. ':lock', token, 'PX', lockDuration)
  if not marked then call('ZADD', KEYS[14], '0', '0') end
  -- Made here, not at every end: a closure made at every call cost the ends without a next job ~2 K.
  local function startNext(jobKey, processedOn, pb)
    local call = redis.call
    local job = call('HGETALL', jobKey)
    ${leanStartJob('call')}
  end
  return job, {startNext(nextKey, ARGV[2], name), nextId, 0, 0}
end`;

/** The end's direct completion for `moveToFinishedBody`, or undefined when that is not the text it was written against. */
export function handedComplete(moveToFinishedBody: string): string | undefined {
  const sha1 = createHash('sha1').update(moveToFinishedBody).digest('hex');
  return sha1 === MOVE_TO_FINISHED_SHA1 ? HANDED_COMPLETE : undefined;
}

/**
 * A Lua statement: where a baked end carried the worker's packed options as their parts (`known`:
 * `{token, lockDuration, name, head, tail}`, end-options.ts) and `argv`'s 8th is their placeholder
 * (false), the packed options made again as BullMQ packed them — `head`, the token as msgpack's
 * string (its header as msgpackr writes it: fixstr, str8, str16, str32), `tail` — for a reader of
 * the bytes (BullMQ's text, the refetch's). Made only there: the direct completion and the direct
 * refetch read `known`. `at`: the options' position in `argv` (moveToFinished's 8th, moveToActive's 3rd).
 */
export function knownPacked(argv: string, known: string, at = 8): string {
  return `if ${argv}[${at}] == false and ${known} then
  local t = ${known}[1]
  local n, h = #t, nil
  if n < 32 then h = string.char(160 + n)
  elseif n < 256 then h = string.char(217, n)
  elseif n < 65536 then h = string.char(218, math.floor(n / 256), n % 256)
  else h = string.char(219, math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256) end
  ${argv}[${at}] = ${known}[4] .. h .. t .. ${known}[5]
end`;
}
