/**
 * The hand-off's add of a plain job (the gateway's every run) without running BullMQ's
 * addStandardJob-9 text for it: the commands that text sends on that one path (through
 * bull-quiet.ts and the hand-off's wrapper, `bullRedis`, which notes the job's hash and holds the
 * push and the marker) sent directly, in its order. The text makes ~30 functions at every call
 * (deduplication, parents, delays) and sends three commands that bull-quiet answers without Redis
 * (the events' two XADDs, the HGET of their length): Lua work for a path whose course the call's
 * own arguments decide (test/bench/README.md, round 35, `submit-lua`).
 *
 * Taken only when the arguments say the text would take that path, decided before any command:
 * the job has an id of its own (no counter), no parent, parent dependencies, repeat key or
 * deduplication (`opts.de`), and is not LIFO. Then, as the text: `jobOrIdle` (the hand-off's
 * EXISTS of the job and the queue's sets); a job of that id found there leaves the rest to the text
 * (its duplicate path, where `jobOrIdle` answers as it found, not asking again); else the job's HMSET (name, data, `cjson.encode(opts)`, timestamp, delay,
 * priority: the text's own values), the queue's meta read as `getTargetQueueList` reads it (paused:
 * the paused list; a concurrency cap reached: no marker), the push and the base marker. The
 * options' JSON is the add's ARGV[4] when its caller sends it (the gateway: the text `cjson.encode`
 * makes of ARGV[3], made once per options there: ~18 K instructions a submit here, round 47
 * `submit-lean`); BullMQ's text reads no ARGV[4]. ARGV[4] is sent only for the options of a run's
 * job as `@islet/runs` `runJobOptions` makes them (the gateway's packed-options.ts `cjsonOf` answers
 * a text for those alone: attempts, backoff, removeOnComplete, removeOnFail), so with it none of
 * `de`, `lifo`, `delay`, `priority` is set and the options (ARGV[3]) are not unpacked at all: a
 * ~10-string, 4-table `cmsgpack.unpack` at every submit read only to learn that (test/bench/README.md
 * round 50 `submit-args`); without it they are read as before. With ARGV[4] the gateway may also
 * send ARGV[5..8]: the job's key (ARGV[1]'s prefix and id), its id, name and timestamp (the whole
 * ms's digits: what Redis and `jobWritten` print of the packed number), which it sends only for the
 * packed `[prefix, id, name, time, nil x5]` of a run's add whose id is not empty: `args` (ARGV[1],
 * still sent for BullMQ's text) is then not unpacked (~9.6 K instructions, round 50 `submit-args`;
 * round 51 `submit-lua`). The delay and priority go as '0' (what was printed of the numbers 0).
 * Answers the
 * job's id, as the text. Another text (another BullMQ) gets no such path (`handedAdd` undefined).
 */
import { createHash } from 'node:crypto';

/** SHA1 of the addStandardJob-9 text `HANDED_ADD` was written against (BullMQ 5.81.5). */
export const ADD_STANDARD_JOB_SHA1 = '808626431266f2e834f108cac6b35ce556927132';

/**
 * `local function handedAdd(KEYS, ARGV)` (addStandardJob-9's keys and arguments), in the hand-off's
 * script scope after its wrapper (`bullRedis`, `jobOrIdle`): the add's answer, or nil when the text
 * must run (nothing sent then but a found duplicate's EXISTS, which the text's `jobOrIdle` answers from).
 */
const HANDED_ADD = `local function handedAdd(KEYS, ARGV)
  local jobIdKey, jobId, name, timestamp, opts = ARGV[5], ARGV[6], ARGV[7], ARGV[8], nil
  local given = timestamp ~= nil
  -- ARGV[5..8] given (with ARGV[4]): ARGV[1]'s values (see the header), not unpacked here.
  if not timestamp then
    local args = cmsgpack.unpack(ARGV[1])
    -- ARGV[4] given: the options are a run's own (see the header), none of them read here.
    opts = ARGV[4] == nil and cmsgpack.unpack(ARGV[3]) or nil
    jobId, name, timestamp = args[2], args[3], args[4]
    if type(jobId) ~= 'string' or jobId == '' or args[5] ~= nil or args[6] ~= nil or args[7] ~= nil
      or args[8] ~= nil or args[9] ~= nil or (opts and (opts['de'] ~= nil or opts['lifo'])) then
      return nil
    end
    jobIdKey = args[1] .. jobId
  end
  local call = bullRedis.call
  if jobOrIdle(jobIdKey) == 1 then return nil end
  if given then
    -- Every value a string (ARGV's): the hash noted for the hand-off's fetch as \`jobWritten\` notes
    -- it (the first write of the new job), from the table the HMSET is sent from (no copy, no
    -- checks); with no worker idle (no fetch follows) not noted, sent as it is.
    jobNoted = true
    if idleSeen then
      local job = {'name', name, 'data', ARGV[2], 'opts', ARGV[4], 'timestamp', timestamp, 'delay', '0', 'priority', '0'}
      bullQ.known = {jobIdKey, job}
      bullCall('HMSET', jobIdKey, unpack(job))
    else
      bullQ.known = nil
      bullCall('HMSET', jobIdKey, 'name', name, 'data', ARGV[2], 'opts', ARGV[4], 'timestamp', timestamp,
        'delay', '0', 'priority', '0')
    end
  else
    -- ARGV[4] (the gateway's, run-add-store.ts): the options as cjson writes them, not encoded here.
    call('HMSET', jobIdKey, 'name', name, 'data', ARGV[2], 'opts', ARGV[4] or cjson.encode(opts),
      'timestamp', timestamp, 'delay', opts and opts['delay'] or '0', 'priority', opts and opts['priority'] or '0')
  end
  -- getTargetQueueList's, kept for the fetch as bull-quiet.ts' \`bullCall\` keeps the meta's read
  -- (KEYS[3] is the meta key \`add\` named): its key made as a constant, not by joining the fields.
  local target, maxed = KEYS[1], false
  local memo = bullQ.meta
  if not memo then
    memo = {}
    bullQ.meta = memo
  end
  local meta = memo['paused\\nconcurrency\\nmax\\nduration']
  if not meta then
    meta = bullRaw('HMGET', KEYS[3], 'paused', 'concurrency', 'max', 'duration')
    memo['paused\\nconcurrency\\nmax\\nduration'] = meta
  end
  if meta[1] then
    target, maxed = KEYS[2], true
  elseif meta[2] and call('LLEN', KEYS[7]) >= tonumber(meta[2]) then
    maxed = true
  end
  call('LPUSH', target, jobId)
  if not maxed then call('ZADD', KEYS[9], 0, '0') end
  return jobId
end`;

/** The hand-off's direct add for `addBody`, or undefined when that is not the text it was written against. */
export function handedAdd(addBody: string): string | undefined {
  const sha1 = createHash('sha1').update(addBody).digest('hex');
  return sha1 === ADD_STANDARD_JOB_SHA1 ? HANDED_ADD : undefined;
}
