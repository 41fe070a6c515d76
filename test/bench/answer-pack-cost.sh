#!/bin/bash
# Redis's instructions for a script run once under callgrind (only inside script calls), with a
# hand-off's pushed member (script-replay.ts' SOURCES_TO writes handed.bin: cmsgpack of {token,
# answer}) as its ARGV[1] (round 44 `handoff-terms`: the answer's cmsgpack.pack, 1,000 times, and
# what else could carry it):
#   bash test/bench/answer-pack-cost.sh pack "local a=cmsgpack.unpack(ARGV[1]) for i=1,1000 do local p=cmsgpack.pack(a) end return 1"
# then `callgrind_annotate /tmp/ht/pack.<label>.out | grep TOTALS` (less a `return 1` run's).
set -e
mkdir -p /tmp/ht
PORT=$((20000 + RANDOM % 10000))
valgrind --tool=callgrind --toggle-collect=evalGenericCommand --callgrind-out-file=/tmp/ht/pack.$1.out redis-server --port $PORT --save '' --appendonly no >/dev/null 2>&1 &
PID=$!
for i in $(seq 1 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.3; done
redis-cli -p $PORT -x eval "$2" 0 < "${HANDED:-/tmp/sf/base/handed.bin}" > /tmp/ht/pack.$1.res
redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true
wait $PID || true
callgrind_annotate /tmp/ht/pack.$1.out | grep TOTALS
