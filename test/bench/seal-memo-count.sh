# `bash test/bench/seal-memo-count.sh [N]`: instructions a submit's two seals and a read's two
# opens cost through the gateway run store's own-seal memo, counted by callgrind
# (seal-memo-count.ts; no bench lock needed). `MEMO=<path>` measures another own-seal-memo.ts
# (the base's: `git show eb99e4b0:services/gateway/src/own-seal-memo.ts > /tmp/base/own-seal-memo.ts`;
# its `@islet/core` import is a type only). Round 50 (`gateway-submit`).
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
# V8's hash and random seeds fixed: the Maps' layouts repeat run to run (~±4 k a submit without).
callgrind_total() {
  valgrind --tool=callgrind --callgrind-out-file="${CG_OUT:-/dev/null}" --smc-check=all-non-file \
    node --single-threaded --hash-seed=1 --random-seed=1 "$1" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
n=${1:-2000}
script=test/bench/seal-memo-count.ts
which=${MEMO:-this tree}
# `ONLY=memo`: the memo's two lines alone (another memo's, against the same plain-sealer lines).
MODE=seal per_op "seal, memo ($which)" "$script" "$n" SIDE memo
[ "${ONLY:-}" = memo ] || MODE=seal per_op 'seal, plain sealer' "$script" "$n" SIDE plain
MODE=read per_op "read, memo hit ($which)" "$script" "$n" SIDE memo
[ "${ONLY:-}" = memo ] || MODE=read per_op 'read, plain sealer (a miss)' "$script" "$n" SIDE plain
