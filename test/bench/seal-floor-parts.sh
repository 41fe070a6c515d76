#!/usr/bin/env bash
# Instructions a seal or an open, a0565cd2's sealer ("before") and the head's ("after"), by size:
# callgrind's total with N=$N minus with N=0, over N (seal-floor-parts.ts). Counted: no bench lock.
# V8 runs single-threaded (its compiler and GC on the main thread), so the counts repeat.
# WARM (default 30000) steps first, so no compile of the step falls in the counted N.
# Usage: [OPS="seal open"] [SIZES="40 120 400 2000"] [FORMS="before after"]
#        bash scripts/toolchain.sh bash test/bench/seal-floor-parts.sh [N]
set -euo pipefail
N=${1:-2000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
export WARM=${WARM:-30000}
for op in ${OPS:-seal open}; do
  for size in ${SIZES:-40 120 400 2000}; do
    for form in ${FORMS:-before after}; do
      per_op "$op-$size-$form" test/bench/seal-floor-parts.ts "$N" PART "$op-$size-$form"
    done
  done
done
