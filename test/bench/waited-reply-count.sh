# `bash test/bench/waited-reply-count.sh [N]`: instructions a waited submit's answer costs from the
# pushed end's turn to its bytes written, per SIDE (waited-reply-count.ts), counted by callgrind with
# V8's seeds fixed (no bench lock needed). SIDES: base head floor norecord (default all); WARM
# (default 3000) requests before collection starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
# Collection switched on after the warm-up by the probe itself (CG_TOGGLE=1): the start is not counted.
export CG_TOGGLE=1
callgrind_total() {
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="${CG_OUT:-/dev/null}" --smc-check=all-non-file \
    node --single-threaded --hash-seed=1 --random-seed=1 --expose-gc "$1" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
n=${1:-2000}
for side in ${SIDES:-base head floor norecord}; do
  per_op "$side" test/bench/waited-reply-count.ts "$n" SIDE "$side"
done
