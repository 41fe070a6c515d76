# `bash test/bench/seal-memo-count.sh [N]`: instructions a submit's two seals and a read's two
# opens cost through the gateway run store's own-seal memo, counted by callgrind
# (seal-memo-count.ts; no bench lock needed). `MEMO=<path>` measures another own-seal-memo.ts
# (the base's: `git show eb99e4b0:services/gateway/src/own-seal-memo.ts > /tmp/base/own-seal-memo.ts`;
# its `@islet/core` import is a type only). Round 50 (`gateway-submit`).
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
n=${1:-2000}
script=test/bench/seal-memo-count.ts
which=${MEMO:-this tree}
MODE=seal per_op "seal, memo ($which)" "$script" "$n" SIDE memo
MODE=seal per_op 'seal, plain sealer' "$script" "$n" SIDE plain
MODE=read per_op "read, memo hit ($which)" "$script" "$n" SIDE memo
MODE=read per_op 'read, plain sealer (a miss)' "$script" "$n" SIDE plain
