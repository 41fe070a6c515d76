-- finishRun(f, note, d): both halves of a run's end in one step, for one server only (its keys span the
-- run's and the tenant's slots, so never on a Cluster): the final status (includes/transition.lua,
-- refused once the run is final), the tenant half (includes/finish-tenant.lua) and the stored
-- bytes the end adds to its tenant's count (includes/charge.lua).
-- KEYS[1] run record, KEYS[2] events, KEYS[3] the run's journal, KEYS[4..12] finish-tenant-9's
--   KEYS[1..9], KEYS[13] the tenant's stored-bytes counter, KEYS[d] (`d`, optional) the run's
--   decisions (expired with the record at an end written when ARGV[7] ends in `d`: includes/transition.lua).
-- ARGV[1..6] as transition-4's, ARGV[7] '1' = push the end to its waiter (transition-4's KEYS[3]),
--   '2' = push it, and the end's caller executed the run's attempt and sent no call in it: with the
--   record's `attempts` at 1 (no other attempt began) the journal holds that count alone, as
--   includes/begin-attempt.lua returns it, and is not read, '3' and '4' = as '1' and '2', the push
--   `end3` where includes/transition.lua may (format 2: run-store.ts `pushArg`), '5' = not pushed,
--   no call sent (round 46: with `attempts` at 1 no journal exists, and none is expired; a claim
--   creating one after this end takes the record's expiry, lua/claim-1.lua),
--   each of them followed by `d` when the run may have decisions (their hash KEYS[d] is then
--   expired at the end: run-store-args.ts `endModeArg`),
--   ARGV[8..16] finish-tenant-9's ARGV[1..9], ARGV[17] bytes, ARGV[18] when the counter expires
--   (unix seconds), ARGV[f..] field, value, ...
-- The tenant half copies the status the record keeps: this end's, or when another end won, that
-- one's (recorded once all the same). The bytes are counted whoever won. A record created with
-- `quiet` '1' (includes/create-run.lua: no tenant stream listened then) ends without announcing its
-- feed entry: any tenant stream since follows the run on its own channel, which the end publishes.
-- `note` (optional, a table): an end written notes there its event's stream id (`note['#at']`,
-- `<ms>-<n>`), whose time (Redis's ms) a lease later in the same script takes instead of reading
-- TIME again (lease-scripts.ts `endCompleteStartScript`: the next job's acquire).
-- Returns 1 (written), 0 (already final: nothing written), -1 (no record); and, second, true when
-- the tenant's pending list is due a fold (includes/finish-tenant.lua: the caller sends it, after).
--- @include "transition"
--- @include "finish-tenant"
--- @include "charge"
local function finishRun(f, note, d)
  chargeBytes(KEYS[13], ARGV[17], ARGV[18])
  -- An end pushed to its waiter reads the record whole here, once: its status for the guard, and
  -- the record the push carries (includes/transition.lua applies this write to it).
  local p = ARGV[7]
  -- A mode with a trailing `d` (run-store-args.ts `endModeArg`): the run may have decisions, which
  -- the end expires (KEYS[d]); without it the caller knows it has none, and no EXPIRE goes (round 48).
  if #p > 1 then p = string.sub(p, 1, 1) else d = nil end
  local push = p == '1' or p == '2' or p == '3' or p == '4'
  local before, st, kind, quiet, attempts
  if push then
    before = redis.call('HGETALL', KEYS[1])
    for i = 1, #before, 2 do
      local name = before[i]
      if name == 'status' then st = before[i + 1]
      elseif name == 'kind' then kind = before[i + 1]
      elseif name == 'quiet' then quiet = before[i + 1]
      elseif name == 'attempts' then attempts = before[i + 1] end
    end
  else
    local got = redis.call('HMGET', KEYS[1], 'status', 'kind', 'quiet', 'attempts')
    st, kind, quiet, attempts = got[1], got[2], got[3], got[4]
  end
  quiet = quiet == '1'
  if not st then
    finishTenant(4, 8, '', '')
    return -1
  end
  if st == 'Completed' or st == 'Failed' or st == 'Cancelled' then
    -- The index records the end the record kept: its kind, `none` for a Completed record without
    -- one (a later release may leave `kind none` out), else this end's.
    if not kind and st == 'Completed' then kind = 'none' end
    return 0, finishTenant(4, 8, st, kind or ARGV[11], quiet) == 2
  end
  local firstOnly = (p == '2' or p == '4' or p == '5') and attempts == '1'
  if push and (p == '3' or p == '4') then push = 3 end
  local status, at = writeTransition(1, 1, f, push, st, before, firstOnly, d)
  -- The id as it is (`note['#at']`): its time read by a reader that needs it (a grant, the next
  -- job's acquire), not at every end (round 50 `end-script`).
  if note then note['#at'] = at end
  return 1, finishTenant(4, 8, status, ARGV[11], quiet) == 2
end
