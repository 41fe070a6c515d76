#!/bin/bash
# The handed submit's pushed answer (`cmsgpack.pack({token, answer})`, handoff-scripts.ts) against
# every other way found to make it, in Redis instructions (round 46 `answer-pack`). Counts only: no
# bench lock. Each Lua variant runs 1,000 times in one script call under callgrind
# (answer-pack-cost.sh, collecting inside script calls), from a recorded member (HANDED: a
# handoff-terms-counts.sh side's handed.bin), less a loop doing nothing; each checks it made the
# same value (1) or the same bytes. Then the whole process's cost of a record's 32 fields sent as
# arguments against one 773-byte argument (1,000 EVALSHAs of `return 1`, R=1001 less R=1).
#   HANDED=/tmp/handoff-terms-counts/<t>/default-<n>/handed.bin bash test/bench/answer-pack-alts.sh
set -eu
cd "$(dirname "$0")/../.."
: "${HANDED:?the recorded member: HANDED=<handoff-terms-counts side>/handed.bin}"
export HANDED
PRE='local a = cmsgpack.unpack(ARGV[1])
local pack, p = cmsgpack.pack, nil
'
declare -A V
V[null]='for i = 1, 1000 do p = i end return 1'
V[pack]='for i = 1, 1000 do p = pack(a) end return {#p, p == ARGV[1] and 1 or 0}'
# A string of the member's size made by one concat of two ready halves (found interned: the hash and
# the compare, no allocation): what any way of making the member pays.
V[floor]='local h1, h2 = string.sub(ARGV[1], 1, 580), string.sub(ARGV[1], 581)
for i = 1, 1000 do p = h1 .. h2 end return {#p, p == ARGV[1] and 1 or 0}'
V[record]='local r = a[2][5][1] for i = 1, 1000 do p = pack(r) end return {#p, #r}'
V[jobfields]='local r = a[2][1] for i = 1, 1000 do p = pack(r) end return {#p, #r}'
V[unpackrecord]='local blob = pack(a[2][5][1]) for i = 1, 1000 do p = cmsgpack.unpack(blob) end return {#blob, #p}'
# The member with its record ready packed (as a gateway could send it): the rest packed in pieces,
# the fixed headers as literals, one concat; the same bytes.
V[pieces]='local blob, ans = pack(a[2][5][1]), a[2]
for i = 1, 1000 do
  local st = ans[5]
  p = "\146" .. pack(a[1]) .. "\150" .. pack(ans[1]) .. pack(ans[2]) .. "\0\0\148" .. blob .. "\1" .. pack(st[3]) .. pack(st[4]) .. "\1"
end
return {#p, p == ARGV[1] and 1 or 0}'
# cmsgpack'\''s bytes by a Lua encoder: fixstr headers from a table, longer ones by string.char,
# each table'\''s pieces in one list and one table.concat; anything else packed by cmsgpack alone.
V[lua]='local H = {[0] = "\160", "\161", "\162", "\163", "\164", "\165", "\166", "\167", "\168", "\169",
  "\170", "\171", "\172", "\173", "\174", "\175", "\176", "\177", "\178", "\179", "\180", "\181", "\182",
  "\183", "\184", "\185", "\186", "\187", "\188", "\189", "\190", "\191"}
local char, concat, floor = string.char, table.concat, math.floor
local enc
enc = function(t, out, k)
  local n = #t
  if n == 0 or n > 65535 or next(t, n) ~= nil then out[k] = pack(t) return k + 1 end
  if n < 16 then out[k] = char(0x90 + n) else out[k] = char(0xdc, floor(n / 256), n % 256) end
  k = k + 1
  for i = 1, n do
    local v = t[i]
    local ty = type(v)
    if ty == "string" then
      local l = #v
      if l < 32 then out[k] = H[l]
      elseif l < 256 then out[k] = char(0xd9, l)
      else out[k] = char(0xda, floor(l / 256), l % 256) end
      out[k + 1] = v
      k = k + 2
    elseif ty == "table" then k = enc(v, out, k)
    elseif ty == "number" and v >= 0 and v < 128 and v == floor(v) then out[k] = char(v) k = k + 1
    else out[k] = pack(v) k = k + 1 end
  end
  return k
end
for i = 1, 1000 do local out = {} enc(a, out, 1) p = concat(out) end
return {#p, p == ARGV[1] and 1 or 0}'
# Every string as str16 and every array as array16 by struct.pack (a value cmsgpack and 9f886855'\''s
# runner read alike, not cmsgpack'\''s bytes): one format and one argument list a member.
V[struct]='local spack, concat = struct.pack, table.concat
local function enc(t, args, fmt)
  local n = #t
  args[#args + 1] = 0xdc
  args[#args + 1] = n
  fmt[#fmt + 1] = "BH"
  for i = 1, n do
    local v = t[i]
    if type(v) == "string" then
      local k = #args
      args[k + 1], args[k + 2], args[k + 3] = 0xda, #v, v
      fmt[#fmt + 1] = "BHc0"
    elseif type(v) == "table" then enc(v, args, fmt)
    else args[#args + 1] = v == false and 0xc2 or v fmt[#fmt + 1] = "B" end
  end
end
for i = 1, 1000 do
  local args, fmt = {}, {">"}
  enc(a, args, fmt)
  p = spack(concat(fmt), unpack(args))
end
return {#p, cjson.encode(cmsgpack.unpack(p)) == cjson.encode(a) and 1 or 0}'
total() { grep TOTALS | tr -d , | awk '{print $1}'; }
null=$(bash test/bench/answer-pack-cost.sh alt-null "$PRE${V[null]}" | total)
echo "variant | instructions a member | answer"
for v in pack floor record jobfields unpackrecord pieces lua struct; do
  t=$(bash test/bench/answer-pack-cost.sh "alt-$v" "$PRE${V[$v]}" | total)
  echo "$v | $(( (t - null) / 1000 )) | $(tr '\n' ' ' < /tmp/ht/pack.alt-$v.res)"
done
# The record's 32 fields as arguments (as the gateway sends them) against one 773-byte argument.
node -e 'const { unpack } = require("msgpackr"); const a = unpack(require("fs").readFileSync(process.env.HANDED));
  for (const v of a[1][4][0]) process.stdout.write(String(v) + "\0")' > /tmp/ht/record-fields.bin
mapfile -d '' REC < /tmp/ht/record-fields.bin
BLOB=$(head -c 773 /dev/zero | tr '\0' x)
evals() {
  local label=$1 r=$2 port=$((20000 + RANDOM % 10000)) pid
  shift 2
  valgrind --tool=callgrind --callgrind-out-file=/tmp/ht/argv.$label.$r.out redis-server --port $port --save '' --appendonly no >/dev/null 2>&1 &
  pid=$!
  for i in $(seq 1 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.3; done
  sha=$(redis-cli -p $port script load "return 1")
  redis-cli -p $port -r "$r" evalsha "$sha" 0 "$@" >/dev/null
  redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
  wait $pid || true
  callgrind_annotate /tmp/ht/argv.$label.$r.out | total
}
echo "arguments | whole process a call"
for side in x fields blob; do
  case $side in x) A=(x) ;; fields) A=(x "${REC[@]}") ;; blob) A=(x "$BLOB") ;; esac
  one=$(evals "$side" 1 "${A[@]}")
  many=$(evals "$side" 1001 "${A[@]}")
  echo "$side (${#A[@]} args) | $(( (many - one) / 1000 ))"
done
