# `bash test/bench/end-splice-count.sh [N]`: instructions a waited submit's answer body costs from
# its pushed end's `ended` (open, record, body), the whole record stringified (the previous
# release's) against the result's text spliced (round 51 `gateway-end`), per result size; counted
# by callgrind with V8's seeds fixed (end-splice-count.ts; no bench lock needed).
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
callgrind_total() {
  valgrind --tool=callgrind --callgrind-out-file="${CG_OUT:-/dev/null}" --smc-check=all-non-file \
    node --single-threaded --hash-seed=1 --random-seed=1 "$1" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
n=${1:-4000}
for result in ${RESULTS:-trivial logs large}; do
  for side in whole splice; do
    RESULT=$result per_op "$result, $side" test/bench/end-splice-count.ts "$n" SIDE "$side"
  done
done
