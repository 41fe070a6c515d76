#!/bin/bash
# Redis's instructions for a script run once under callgrind (only inside script calls), with a
# registration's terms as its ARGV[1] (round 43 `submit-floor`: the terms' cjson.decode against
# cmsgpack.unpack of the same terms, 1,000 times in one call):
#   bash test/bench/terms-decode-cost.sh json "for i=1,1000 do local t=cjson.decode(ARGV[1]) end return 1" x
#   bash test/bench/terms-decode-cost.sh mp "local p=cmsgpack.pack(cjson.decode(ARGV[1])) for i=1,1000 do local t=cmsgpack.unpack(p) end return #p" x
# then `callgrind_annotate /tmp/sf/dec.<label>.out | grep TOTALS`. TERMS: a file of the terms
# (script-replay.ts' SOURCES_TO writes terms.txt).
set -e
mkdir -p /tmp/sf
PORT=$((20000 + RANDOM % 10000))
valgrind --tool=callgrind --toggle-collect=evalGenericCommand --callgrind-out-file=/tmp/sf/dec.$1.out redis-server --port $PORT --save '' --appendonly no >/dev/null 2>&1 &
PID=$!
for i in $(seq 1 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.3; done
T=$(cat "${TERMS:-/tmp/sf/base/terms.txt}")
redis-cli -p $PORT eval "$2" 0 "$T" "$3" > /tmp/sf/dec.$1.res
redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true
wait $PID || true
