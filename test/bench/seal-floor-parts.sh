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
count() {
  PART="$1" N="$2" WARM=${WARM:-30000} valgrind --tool=callgrind --callgrind-out-file=${CG_OUT:-/dev/null} --smc-check=all-non-file \
    node --single-threaded test/bench/seal-floor-parts.ts 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for op in ${OPS:-seal open}; do
  for size in ${SIZES:-40 120 400 2000}; do
    for form in ${FORMS:-before after}; do
      zero=$(count "$op-$size-$form" 0)
      many=$(count "$op-$size-$form" "$N")
      echo "$op-$size-$form: $(( (many - zero) / N )) instructions a call (N=$N: $many, N=0: $zero)"
    done
  done
done
