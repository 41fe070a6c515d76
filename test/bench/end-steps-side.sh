#!/usr/bin/env bash
# One side of an ABBA of the runner's end steps (test/bench/README.md, round 31 `runner-end`):
#   bash test/bench/ab.sh <base> 1 "bash test/bench/end-steps-side.sh"
# applies the side's stamps (end-steps.patch where services/ has completeAtEnd, else
# end-steps-base.patch, 4fc5afe's), runs RUNS sequential runs, prints /tmp/es-<runner pid>.txt,
# takes the stamps out again. ES_PROMISES=1 also counts the promises made a step.
cd "$(dirname "$0")/../.." || exit 1
if grep -q completeAtEnd services/runner/src/parking-worker-end.ts; then P=test/bench/end-steps.patch; else P=test/bench/end-steps-base.patch; fi
git apply "$P" || exit 1
rm -f /tmp/es-*.txt
RUNS=${RUNS:-400} BENCH_TENANT_SHARE=0.5 node test/bench/sequential.ts 2>&1 | tail -1
cat /tmp/es-*.txt
git apply -R "$P"
