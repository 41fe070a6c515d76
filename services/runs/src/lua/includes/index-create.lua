-- indexCreate(k, a, owned, quiet): the index half of a run's create, in the tenant's slot: appended to the
-- tenant's pending list, which includes/index-fold.lua applies to the index (the run's entry and
-- summary, its session's activity and counters, and the prune of runs whose records expired) when
-- an end brings the list to its fold size (includes/finish-tenant.lua), or a reader of the index
-- folds it first (run-index.ts). A create does not fold (a create's script stays short; where the
-- admission still goes as EVAL, its text goes with every submit); the list stays bounded,
-- as every create's run ends (each end may fold) and those not ended are within the in-flight
-- quota. The feed hears the create at once (announced unless `quiet`: includes/feed.lua), untrimmed:
-- the fold that applies this create's entry trims it.
-- KEYS[k..k+5]: pending list, summaries (HASH id → summary JSON), ended (ZSET id → endedAt),
-- sessions (ZSET session → last activity), session stats (HASH `<session>\n<field>`), the tenant's
-- feed.
-- ARGV[a..a+7]: run id, createdAt, summary JSON, session, principal ('' = none), now ms,
-- retention ms, tenant. Format 2 (run-index-writes.ts `indexCreateArgs`): the summary `#` and the
-- JSON of an object of the fields the entry does not carry (its `m` is then that object, not JSON
-- text), and now '' when it equals createdAt (no `n`); includes/index-fold.lua reads both forms.
-- `owned`: the admission found the session's owner key already naming this principal (the fold
-- then does not look for a missing principal: runs and skills all carry theirs, and an admission
-- that claims the session looks, so a session held by its principal since has it): `"o":1`; not
-- owned, format 2 leaves `o` out (every fold since e807b91 reads it only as `o == 1`), format 1
-- writes `"o":0`.
--- @include "feed"
local function indexCreate(k, a, owned, quiet)
  local m, n = ARGV[a + 2], ARGV[a + 5]
  local lean = string.byte(m, 1) == 35 -- '#'
  local entry
  local i, t, s, p, r = ARGV[a], ARGV[a + 1], ARGV[a + 3], ARGV[a + 4], ARGV[a + 6]
  -- Format 2 with no byte cjson escapes (controls, '"', '/', '\\', DEL) in its texts: the entry as
  -- cjson.encode writes this table, its members in cjson's order for these keys (the table's
  -- slots: a, p, s, r, t, i, then o and n when present), made by one concatenation, not a table
  -- encoded (~15 K of a submit's instructions, test/bench/README.md round 49 `submit-lean`;
  -- run-index.test.ts holds the two to the same bytes).
  if lean and not string.find(i .. t .. s .. p .. r .. n, '[%z\1-\31"/\\\127]') then
    entry = '{"a":"' .. t .. '","p":"' .. p .. '","s":"' .. s .. '","r":"' .. r .. '","t":"c","i":"' .. i
      .. (owned and '","o":1' or '"') .. (n ~= '' and ',"n":"' .. n .. '"' or '') .. ',"m":' .. string.sub(m, 2) .. '}'
  else
    entry = cjson.encode({
      t = 'c', i = i, a = t, m = (not lean) and m or nil, s = s,
      p = p, o = owned and 1 or ((not lean) and 0 or nil), n = n ~= '' and n or nil, r = r,
    })
    -- The object's JSON as the caller wrote it, spliced in as the entry's last member (not decoded and
    -- encoded again by cjson).
    if lean then entry = string.sub(entry, 1, -2) .. ',"m":' .. string.sub(m, 2) .. '}' end
  end
  -- Bare: the fold that applies this entry trims the feed (includes/feed.lua).
  feedAppend(KEYS[k + 5], 'run', ARGV[a], ARGV[a + 7], quiet, true)
  redis.call('RPUSH', KEYS[k], entry)
end
