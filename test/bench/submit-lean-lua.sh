#!/bin/bash
# Redis's instructions for a Lua fragment run 1,000 times in one EVAL under callgrind (only inside
# script calls), for round 47 `submit-lean`'s table of alternatives: `$1` a label, `$2` the loop's
# body (locals `d` = ARGV[1], `r` the result), `$3` ARGV[1] (default the job data below). Less an
# empty loop's count (`empty "r = d"`), / 1,000: a fragment's instructions. `REDIS_SERVER`: another
# build (round 45's with symbols: /tmp/claim-text-redis/src/redis-server). No bench lock (counts).
#   bash test/bench/submit-lean-lua.sh decode "local ok, j = pcall(cjson.decode, d) r = j.tenant"
#   bash test/bench/submit-lean-lua.sh match "r = string.match(d, '^{\"tenant\":\"([^\"\\\\%c]*)\",\"enqueuedAtMs\":%d+%.?%d*}\$')"
#   bash test/bench/submit-lean-lua.sh optsenc "local o = {removeOnFail={age=86400}, removeOnComplete={age=3600,count=10000}, backoff={delay=500,type='fixed'}, attempts=3} r = cjson.encode(o)"
set -u
mkdir -p /tmp/submit-lean-lua
PORT=$((20000 + RANDOM % 10000))
out=/tmp/submit-lean-lua/$1.out
valgrind --tool=callgrind --toggle-collect=evalGenericCommand --callgrind-out-file="$out" \
  "${REDIS_SERVER:-redis-server}" --port $PORT --save '' --appendonly no >/dev/null 2>&1 &
PID=$!
for _ in $(seq 1 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.3; done
redis-cli -p $PORT eval "local d = ARGV[1] local r for i=1,1000 do $2 end return tostring(r)" 0 \
  "${3:-{\"tenant\":\"dev\",\"enqueuedAtMs\":1796632028604.46\}}"
redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true
wait $PID
echo "$1 $(callgrind_annotate "$out" | grep TOTALS)"
