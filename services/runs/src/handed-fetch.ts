/**
 * The hand-off's fetch of the job its own add has just held back, without running BullMQ's
 * moveToActive-11 text for it: the writes that text makes on that one path (through bull-quiet.ts
 * and the hand-off's held push and marker), made directly. BullMQ's text costs Redis ~150 K
 * instructions a submit to interpret (its ~12 functions made, the queue's meta, delayed and rate
 * limit looked at through `bullCall`), for a path whose outcome the add already knows
 * (test/bench/README.md, round 35, `submit-lua`).
 *
 * Taken only where every fact the text would read on its way is known, else BullMQ's text runs as
 * before (`bullFetch`):
 * - the fetch's keys are the add's queue (wait, active, events, delayed, meta, marker) and its
 *   prefix the add's: the job is `prefix .. id`;
 * - the add held its job's push (`heldPush`: the wait list was absent, so the job is its only one,
 *   which RPOPLPUSH would take) and noted its hash (`bullQ.known`), and saw a worker registered idle;
 * - the queue's meta as the add read it (its HMGET of paused, concurrency, max, duration, kept by
 *   `bullCall` until a command on meta) holds none of them: not paused, no concurrency cap, no rate
 *   limit (so neither `maxJobs` nor the limiter's INCR);
 * - the delayed set was found absent (the text's promotion reads nothing); the worker's options have
 *   no limiter and a lock token (not '0'); the job's id does not start with '0:' (BullMQ's marker ids).
 * The writes, in the text's order: `LPUSH active <id>` (the held push's RPOPLPUSH), `SET <job>:lock
 * <token> PX <lockDuration>`, the base marker held (`held`, as the wrapper holds the text's ZADD),
 * the job's start (as `bullStartJob` makes it for the add's fresh hash: `processedOn`, `pb` when
 * the worker has a name, `ats` 1, one HSET, the fields appended to the noted hash); the
 * `active` event is not written (bull-quiet.ts). The answer is the text's: {job, id, 0, 0}.
 *
 * Written against one text: `MOVE_TO_ACTIVE_SHA1`, the SHA1 of BullMQ 5.81.5's moveToActive-11 as
 * it sends it. Another text (another BullMQ) gets no such path (`handedFetch` answers undefined).
 */
import { createHash } from 'node:crypto';

/** SHA1 of the moveToActive-11 text `HANDED_FETCH` was written against (BullMQ 5.81.5). */
export const MOVE_TO_ACTIVE_SHA1 = '6c4c6de2bece2ad87657691d945d902df2198f5e';

/** The add's HMGET of the queue's meta (addStandardJob-9's getTargetQueueList), as bullCall keeps it. */
const META_READ = 'paused\\nconcurrency\\nmax\\nduration';

/**
 * `local function handedFetch(KEYS, ARGV)` (moveToActive-11's keys and arguments) in the hand-off's
 * script scope: answers the fetch as the text would, or nil when a fact is not known (the text runs).
 */
const HANDED_FETCH = `local function handedFetch(KEYS, ARGV)
  local id = heldPush
  if not (id and idleSeen and bullQ.known) then return nil end
  local jobKey = ARGV[1] .. id
  if bullQ.known[1] ~= jobKey or KEYS[1] ~= AK[1] or KEYS[2] ~= AK[7] or KEYS[4] ~= AK[8]
    or KEYS[7] ~= AK[6] or KEYS[9] ~= AK[3] or KEYS[11] ~= AK[9] or not bullAbsent[KEYS[7]] then
    return nil
  end
  local meta = bullQ.meta and bullQ.meta['${META_READ}']
  if not meta or meta[1] or meta[2] or meta[3] or meta[4] then return nil end
  if opts.limiter ~= nil or opts.token == '0' or string.sub(id, 1, 2) == '0:' then return nil end
  -- The job's start as bullStartJob makes it for a hash the add's HMSET has just written (none of
  -- the start's fields in it: \`ats\` 0, so 1) with text values: its fields appended, one HSET.
  local name, processedOn, job = opts.name, ARGV[2], bullQ.known[2]
  if type(processedOn) ~= 'string' or (name ~= nil and type(name) ~= 'string') then return nil end
  for i = 1, #job, 2 do
    local f = job[i]
    if f == 'processedOn' or f == 'pb' or f == 'ats' then return nil end
  end
  heldPush = nil
  bullCall('LPUSH', KEYS[2], id)
  bullCall('SET', jobKey .. ':lock', opts.token, 'PX', opts.lockDuration)
  held = true
  bullQ.known = nil
  local n = #job
  job[n + 1], job[n + 2] = 'processedOn', processedOn
  if name then
    job[n + 3], job[n + 4], job[n + 5], job[n + 6] = 'pb', name, 'ats', '1'
    bullCall('HSET', jobKey, 'processedOn', processedOn, 'pb', name, 'ats', '1')
  else
    job[n + 3], job[n + 4] = 'ats', '1'
    bullCall('HSET', jobKey, 'processedOn', processedOn, 'ats', '1')
  end
  return {job, id, 0, 0}
end`;

/** The hand-off's direct fetch for `moveToActiveBody`, or undefined when that is not the text it was written against. */
export function handedFetch(moveToActiveBody: string): string | undefined {
  const sha1 = createHash('sha1').update(moveToActiveBody).digest('hex');
  return sha1 === MOVE_TO_ACTIVE_SHA1 ? HANDED_FETCH : undefined;
}

/** moveToActive-11's read of the worker's packed options (its ARGV[3]), as BullMQ 5 writes it (FETCH_TAKE_BACK's too). */
export const FETCH_OPTS_READ = 'local opts = cmsgpack.unpack(ARGV[3])';

/**
 * `source` (a fused fetch's text: moveToActive-11 inside it, FETCH_TAKE_BACK before it) reading the
 * worker's options from `known` — a Lua expression, a baked fetch's part `{token, lockDuration,
 * name, …}` the runner took apart and checked (its end-options.ts `fetchVerdict`: no limiter, a
 * whole lock duration, the token not '0', a name) — instead of unpacking ARGV[3] (then
 * `false`): the table the text reads is made with no bytes at all, and the lock duration is the
 * text Redis would print for its number (round 52 `fetch-token`). Undefined: `source` does not read
 * the options as BullMQ 5 does (another text keeps its packed options).
 */
export function knownFetchOptions(source: string, known: string): string | undefined {
  if (!source.includes(FETCH_OPTS_READ)) return undefined;
  return source.replaceAll(
    FETCH_OPTS_READ,
    `local opts = {token = ${known}[1], lockDuration = ${known}[2], name = ${known}[3]} -- (handed-fetch.ts)`,
  );
}
