#!/usr/bin/env bash
# One ab.sh side of round 34's `engine-mode` (test/bench/README.md):
#   SIDE=pinned (default): the engine alone, 3 s sequential; engine-mode.ts with the runner and its
#     hosts on one CPU (PIN=same); 2000 sequential runs (sequential.ts).
#   SIDE=busy: engine-mode.ts with PIN=same, then unpinned beside a busy loop (a stand-in for another
#     tenant of a 2-core box holding one CPU).
#   SIDE=busy-cluster: the cluster bench (BENCH_SECONDS=2) beside a busy loop.
# bash test/bench/ab.sh <base> 1 "bash test/bench/engine-mode-side.sh"
set -u
cd "$(dirname "$0")/../.."
case "${SIDE:-pinned}" in
  pinned)
    node --input-type=module -e "import { engineBaseline } from './test/bench/baselines.ts'; const e = await engineBaseline(3, true); console.log('engine alone sequential', e.sequential.perSec.toFixed(1), 'runs/s, p50', e.sequential.p50.toFixed(3))" 2>&1 | grep engine
    PIN=same node test/bench/engine-mode.ts 2>&1 | grep "^cycle\|  all"
    RUNS=2000 node test/bench/sequential.ts 2>&1 | grep "sequential runs"
    ;;
  busy | busy-cluster)
    [ "$SIDE" = busy ] && PIN=same node test/bench/engine-mode.ts 2>&1 | grep "^cycle\|  all\|engine ≥"
    node -e 'for(;;){}' &
    hog=$!
    if [ "$SIDE" = busy ]; then
      node test/bench/engine-mode.ts 2>&1 | grep "^cycle\|  all\|engine ≥"
    else
      BENCH_SECONDS=2 node test/bench/cluster-bench.ts
    fi
    kill "$hog"
    ;;
esac
