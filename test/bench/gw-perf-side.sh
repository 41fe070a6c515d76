#!/usr/bin/env bash
# One `ab.sh` side (README round 35, `call-gw`): the gateway's main thread `perf record`ed for 6 s
# of lone calls (gateway-calls-cpu.ts, JIT names from --perf-basic-prof-only-functions), into
# $PERF_OUT/side.<n>.perf, n counting the sides. Read with perf-inclusive.ts, e.g.
#   SHOW='JS:safeParse|JS:URL ' node test/bench/perf-inclusive.ts /tmp/gwperf/side.1.perf 100 30
# (units 100: every figure over the first line's total is a share of the thread's samples).
#   bash test/bench/ab.sh <base> 1 "bash test/bench/gw-perf-side.sh"
set -euo pipefail
out=${PERF_OUT:-/tmp/gwperf}
mkdir -p "$out"
n=$(($(cat "$out/n" 2>/dev/null || echo 0) + 1))
echo "$n" > "$out/n"
GW_NODE_OPTIONS=--perf-basic-prof-only-functions N=${N:-7000} BATCHES=1 \
  node test/bench/gateway-calls-cpu.ts > "$out/side.$n.out" 2>&1 &
bench=$!
sleep 10
gw=$(pgrep -f "$PWD/services/gateway/src/main" | head -1)
perf record -q -e cpu-clock -F 4999 -g -t "$gw" -o "$out/side.$n.perf" -- sleep 6 > /dev/null 2>&1 || true
wait "$bench"
grep lone "$out/side.$n.out"
