#!/bin/bash
# A run's fused end (end + completion, and with NEXT=1 the next job's start) split by Redis's
# functions (round 50 `end-script`): end-start-baked-counts.ts's baked side as a waited trivial run
# ends (`WAITED=1`: pushed, no call sent, its record quiet) on a redis-server with its symbols
# (`REDIS_SRC`, default /tmp/sc-redis/src: 7.0.15 from its tag, `make OPTIMIZATION=-O2 CFLAGS="-g
# -fno-omit-frame-pointer"`, as round 48 built it), then each callgrind file's inclusive
# instructions of the functions below, divided by the N calls collected. Counts: no lock.
#   N=100 bash test/bench/end-script-split.sh
#   bash test/bench/ab.sh eb99e4b0 1 "bash test/bench/end-script-split.sh"
# A side whose completion's time is a multiple of 64 takes BullMQ's text (its trim: ZREMRANGEBYRANK
# among the commands, ~+135 k): run that side again.
set -u
cd "$(dirname "$0")/../.."
n=${N:-100}
fns='luaRedisGenericCommand luaCreateArray luaS_newlstr luaC_step luaF_newLclosure luaF_findupval luaH_new resize luaM_realloc_ luaV_concat json_encode mp_unpack luaB_tonumber redisProtocolToLuaType_Array luaV_settable'
echo "$(date -u +%H:%M:%S) load $(uptime | sed 's/.*load average: //')"
for next in ${NEXTS:-0 1}; do
  out=$(PATH="${REDIS_SRC:-/tmp/sc-redis/src}:$PATH" WAITED=1 NEXT=$next SIDES=baked N=$n \
    POINTS=evalGenericCommand node test/bench/end-start-baked-counts.ts 2>&1 | grep instructions)
  echo "NEXT=$next $out"
  cg=$(ls -t /tmp/end-start-baked-counts/*/baked-evalGenericCommand.cg | head -1)
  incl=$(callgrind_annotate --inclusive=yes --threshold=100 "$cg" 2>/dev/null)
  for f in $fns; do
    i=$(echo "$incl" | grep -E "[:]$f( |$)" | head -1 | awk '{gsub(",","",$1); print $1}')
    printf '  %-30s %8.1f k\n' "$f" "$(echo "${i:-0} / $n / 1000" | bc -l)"
  done
done
