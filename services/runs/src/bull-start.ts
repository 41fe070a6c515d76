/**
 * bull-quiet.ts's job start (prepareJobForProcessing's HMSET of `processedOn` [and `pb`], HINCRBY of
 * `ats` and HGETALL, as moveToActive-11 and moveToFinished-14's fetch of the next job write them): one
 * HGETALL and one HSET of the same fields, `ats` one more than the HGETALL read, the answer patched
 * with them (bull-quiet.ts's header says why that is the same). Part of `BULL_QUIET_PRELUDE` (uses
 * its `bullQ` and `bullCall`).
 *
 * `bullStartJob(jobKey, processedOn, extra, general)` takes the case every fetch of BullMQ 5 brings
 * (`processedOn` a text: the script's ARGV; beside it nothing, or `pb` and the worker's name)
 * without tables of its own: one pass over the job's fields finds `ats` and the three it writes, and
 * a first start's `ats` is the text '1'. The general form (the first branch: any other `extra`, a
 * number `processedOn` such as the hand-off's `now`, or `general` true: the tests' reference) makes
 * four tables and an index of every field: 20,000-27,000 instructions more a start
 * (test/bench/start-cost.ts, test/bench/README.md round 35, `end-lua`). One function, not two: the
 * prelude runs at every script call, and each `local function` in it is a closure made each time.
 * Both branches leave the same hash and answer the same fields in the same order (bull-start.test.ts).
 */
/**
 * The lean start's statements, given locals `job` (the job's fields as HGETALL answers them),
 * `jobKey`, `processedOn` (a text) and `pb` (the worker's name or false/nil), sending through `call`:
 * one pass over the fields, then either BullMQ's three commands (an `ats` that is not a whole number)
 * or one HSET, the answer patched in the general form's order (processedOn, pb, ats, each in place or
 * appended). Shared by `bullStartJob` and the end's direct completion (handed-complete.ts), which
 * runs before the prelude and so cannot call `bullStartJob`.
 */
export function leanStartJob(call: string): string {
  return `local size, ats, iOn, iPb, iAts = #job, 0, nil, nil, nil
for i = 1, size, 2 do
  local f = job[i]
  if f == 'ats' then
    ats, iAts = tonumber(job[i + 1]), i
  elseif f == 'processedOn' then
    iOn = i
  elseif f == 'pb' then
    iPb = i
  end
end
-- Not a whole number below 2^52 (NaN, inf, not a number): BullMQ's three commands, as the general form.
if ats == nil or ats ~= math.floor(ats) or ats >= 2 ^ 52 then
  if pb then ${call}('HMSET', jobKey, 'processedOn', processedOn, 'pb', pb)
  else ${call}('HMSET', jobKey, 'processedOn', processedOn) end
  ${call}('HINCRBY', jobKey, 'ats', 1)
  return ${call}('HGETALL', jobKey)
end
local atsText = '1'
if ats ~= 0 then atsText = string.format('%d', ats + 1) end
if iOn then job[iOn + 1] = processedOn else job[size + 1], job[size + 2], size = 'processedOn', processedOn, size + 2 end
if pb then
  if iPb then job[iPb + 1] = pb else job[size + 1], job[size + 2], size = 'pb', pb, size + 2 end
end
if iAts then job[iAts + 1] = atsText else job[size + 1], job[size + 2] = 'ats', atsText end
if pb then ${call}('HSET', jobKey, 'processedOn', processedOn, 'pb', pb, 'ats', atsText)
else ${call}('HSET', jobKey, 'processedOn', processedOn, 'ats', atsText) end
return job`;
}

export const BULL_START_JOB = `local function bullStartJob(jobKey, processedOn, extra, general)
  local ne = #extra
  local pb = ne == 2 and extra[1] == 'pb' and extra[2]
  if general or type(processedOn) ~= 'string' or not (ne == 0 or type(pb) == 'string') then
    local fields, values = {'processedOn'}, {processedOn}
    for i = 1, #extra, 2 do
      fields[#fields + 1] = extra[i]
      values[#values + 1] = extra[i + 1]
    end
    -- A job its own script added a moment before (the hand-off's add: handoff-scripts.ts) is read from
    -- what the add wrote.
    local known, job = bullQ.known, nil
    bullQ.known = nil
    if known and known[1] == jobKey then job = known[2] else job = bullCall('HGETALL', jobKey) end
    local ats = 0
    for i = 1, #job, 2 do
      if job[i] == 'ats' then ats = tonumber(job[i + 1]) end
    end
    local exact = ats ~= nil and ats == math.floor(ats) and ats < 2 ^ 52
    for n = 1, #values do
      local v = values[n]
      -- A whole number (the hand-off's \`now\`) is stored as Redis writes it: its digits.
      if type(v) == 'number' and v == math.floor(v) and math.abs(v) < 2 ^ 52 then
        values[n] = string.format('%d', v)
      elseif type(v) ~= 'string' then
        exact = false
      end
    end
    if not exact then
      bullCall('HMSET', jobKey, 'processedOn', processedOn, unpack(extra))
      bullCall('HINCRBY', jobKey, 'ats', 1)
      return bullCall('HGETALL', jobKey)
    end
    fields[#fields + 1] = 'ats'
    values[#values + 1] = string.format('%d', ats + 1)
    local args, at, size = {}, {}, #job
    for i = 1, size, 2 do at[job[i]] = i end
    for n = 1, #fields do
      local f, v = fields[n], values[n]
      args[2 * n - 1] = f
      args[2 * n] = v
      local i = at[f]
      if i then
        job[i + 1] = v
      else
        job[size + 1] = f
        job[size + 2] = v
        at[f] = size + 1
        size = size + 2
      end
    end
    bullCall('HSET', jobKey, unpack(args))
    return job
  end
  local known, job = bullQ.known, nil
  bullQ.known = nil
  if known and known[1] == jobKey then job = known[2] else job = bullCall('HGETALL', jobKey) end
  ${leanStartJob('bullCall')}
end`;
